"""`nav tune`: improve the selection policy file under a deterministic supervisor.

A worker (a Claude agent, or a folder of candidate files) proposes one new version of the policy file per
trial; the supervisor runs it in a sandbox over candidates retrieved once (frozen.py), scores it on the dev
split, and keeps or discards it against thresholds written before the loop (supervisor.py). At the end the
winner and the starting policy meet on the held-out split, paired query by query (report.py).
"""
