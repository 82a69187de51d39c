"""What ``rumble serve`` runs: the gunicorn worker, its event loop and the writer process."""
