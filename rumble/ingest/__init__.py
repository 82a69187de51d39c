"""The one path from an upload to the log and the tables: apply a battle, melee reassembly, the ratings fields, growth, plausibility, priority and the upload's check-and-store."""
