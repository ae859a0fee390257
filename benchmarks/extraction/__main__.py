from benchmarks.extraction.run import main

raise SystemExit(main())
