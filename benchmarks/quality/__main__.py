from benchmarks.quality.run import main

raise SystemExit(main())
