"""Scores and rankings: pure functions over plain numbers. No Flask, no SQL."""
