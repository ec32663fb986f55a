"""The web process, `python -m config.web` (the Procfile's web line): granian serving the web server
glue of config/server/ (its process.py holds granian's options and the start-up checks)."""

from config.server.process import main

if __name__ == "__main__":
    main()
