# The two commands of the README: `make run` and `make test`.
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)
PORT   ?= 8000

.PHONY: install run test lint format migrate clean bench

$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(PY) manage.py migrate --noinput

run: migrate
	$(PY) manage.py collectstatic --noinput -v0
	$(PY) manage.py seed_demo --if-empty
	@# Local trial runs deliver webhooks to receivers on this machine unless told otherwise.
	PATH="$(CURDIR)/$(BIN):$$PATH" WEBHOOK_ALLOW_PRIVATE_TARGETS=$${WEBHOOK_ALLOW_PRIVATE_TARGETS:-true} \
		$(BIN)/honcho start -p $(PORT) web worker beat

test: install
	$(BIN)/pytest

# Benchmarks against their floors, on PostgreSQL and Redis at 127.0.0.1 (see README: Benchmarks).
bench: install
	$(PY) bench/run.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var staticfiles db.sqlite3
