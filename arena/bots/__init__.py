"""Bots: submission, URL changes and health checks (:mod:`.service`), the periodic health
sweep (:mod:`.sweep`) and each bot's last calls for its owner (:mod:`.calls`).
"""
