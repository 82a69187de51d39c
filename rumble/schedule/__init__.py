"""What runs on a schedule: batch rankings, uploader standings, held battles, history and exports."""
