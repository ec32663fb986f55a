# The two commands of the README: `make run` and `make test`.
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
# requirements.txt: the runtime pins (production installs only these); requirements-dev.txt: the
# test, lint and local-run tools on top (it starts with `-r requirements.txt`). Both are compiled
# from the .in files by `make requirements`.
STAMP  := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | sha1sum | cut -c1-12)
PORT   ?= 8000
# Seconds `make run` gives its processes to stop once one has stopped (on Ctrl-C: web and beat at
# once), before honcho kills what is left. honcho's own 5 s (honcho.manager.KILL_WAIT, which no option
# sets) would kill the worker while it lets its webhook attempts in flight end and records them: a
# delivery's lease is WEBHOOK_TIMEOUT*2+5 s, 25 s by default (docs/operations.md, Stopping).
STOP_WAIT ?= 30
# honcho exits 130 when Ctrl-C stopped it (143 on SIGTERM): how a trial run ends, not an error for
# make to report ("make: *** [run] Error 143"), so that is exit status 0; a process that failed
# still fails the run.
define HONCHO_PY
import sys, honcho.command, honcho.manager
honcho.manager.KILL_WAIT = float(sys.argv.pop(1))
try:
    honcho.command.main()
except SystemExit as stop:
    sys.exit(0 if stop.code in (130, 143) else stop.code)
endef
export HONCHO_PY
HONCHO := $(PY) -c "$$HONCHO_PY" $(STOP_WAIT)
# run's processes under honcho. Local trial runs deliver webhooks to receivers on this machine, and
# publish the demo's repository channel to a local repository under var/, unless told otherwise. honcho gives
# each process a PORT of its own (web's, +100, +200): all of them print and send the web's address
# (SITE_URL). The shell becomes honcho (exec), so Ctrl-C and make's SIGTERM reach honcho, not a
# shell that would die of them first.
RUN_PROCESSES ?= web worker beat
START = exec env SITE_URL=$${SITE_URL:-$$($(PY) -c 'from config.settings import SITE_URL; print(SITE_URL)')} \
	PATH="$(CURDIR)/$(BIN):$$PATH" WEBHOOK_ALLOW_PRIVATE_TARGETS=$${WEBHOOK_ALLOW_PRIVATE_TARGETS:-true} \
	GIT_ALLOW_LOCAL_REPOSITORIES=$${GIT_ALLOW_LOCAL_REPOSITORIES:-true} \
	$(HONCHO) start -p $(PORT) $(RUN_PROCESSES)

.PHONY: install run test lint format migrate clean bench requirements

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(PY) manage.py migrate --noinput

run: migrate
	$(PY) manage.py collectstatic --noinput -v0
	GIT_ALLOW_LOCAL_REPOSITORIES=$${GIT_ALLOW_LOCAL_REPOSITORIES:-true} $(PY) manage.py seed_demo --if-empty
	@$(PY) -c 'import os, config.settings as s; s.EMAIL_BACKEND == "apps.core.mail_files.EmailBackend" and print(f"E-mails are not sent (no EMAIL_BACKEND set): each is written to {os.path.relpath(s.EMAIL_FILE_PATH)}/ as an .eml file, which a mail client opens, and printed by the worker.")'
	$(START)

test: install
	$(BIN)/pytest

# Benchmarks against their floors, on PostgreSQL and Redis at 127.0.0.1 (see docs/benchmarks.md).
bench: install
	$(PY) -m bench

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Recompile requirements.txt and requirements-dev.txt from the .in files. Existing pins are kept;
# move them with e.g. `make requirements PIP_COMPILE_ARGS="--upgrade-package django"` (or --upgrade).
# The dev file is constrained by the runtime pins, then loses them for `-r requirements.txt`.
PIP_COMPILE_ARGS ?=
PIP_COMPILE = CUSTOM_COMPILE_COMMAND="make requirements" $(BIN)/pip-compile --quiet --strip-extras \
	--no-emit-index-url --no-emit-find-links $(PIP_COMPILE_ARGS)

requirements: install
	$(PIP_COMPILE) --output-file requirements.txt requirements.in
	$(PIP_COMPILE) --output-file requirements-dev.txt requirements-dev.in
	awk 'FNR == NR { if (/^[A-Za-z0-9]/) { split($$0, f, "=="); pinned[f[1]] = 1 }; next } \
		/^[A-Za-z0-9]/ { split($$0, f, "=="); skip = (f[1] in pinned); \
			if (!included) { print "-r requirements.txt"; included = 1 } } \
		!/^[ A-Za-z0-9]/ { skip = 0 } \
		!skip' requirements.txt requirements-dev.txt > requirements-dev.txt.tmp
	mv requirements-dev.txt.tmp requirements-dev.txt

clean:
	rm -rf $(VENV) var staticfiles db.sqlite3 db.sqlite3-wal db.sqlite3-shm
