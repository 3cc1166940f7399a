"""``python -m blest.cli`` runs ``blest``."""

from blest.cli import main

raise SystemExit(main())
