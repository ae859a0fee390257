from benchmarks.locomo.run import main

raise SystemExit(main())
