from compilebench.cli import main

raise SystemExit(main())
