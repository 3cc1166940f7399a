"""``python -m blest.cli`` runs ``blest``."""

from blest.cli.commands import main

raise SystemExit(main())
