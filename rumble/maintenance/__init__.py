"""Maintenance of a rumble's derived tables: rebuild, replay, swap, flag and roll back, import and demo data, and the queue of maintenance jobs /admin starts."""
