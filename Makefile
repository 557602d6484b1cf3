# Build and test entry points. `make demo` is the main job, `make test` runs every test.
SHELL := /bin/bash
CARGO ?= cargo
WASM_TARGET := wasm32-wasip1
MODULE := target/$(WASM_TARGET)/release/linkerd_injector_policy.wasm

.PHONY: all policy.wasm test fmt lint unit clean wasm-target

all: policy.wasm

wasm-target:
	@rustup target list --installed 2>/dev/null | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)

policy.wasm: wasm-target
	$(CARGO) build --locked --release --target $(WASM_TARGET) -p linkerd-injector-policy
	cp $(MODULE) policy.wasm

fmt:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --locked --all-targets -- -D warnings

unit:
	$(CARGO) test --locked -p linkerd-injector-policy -- --nocapture

test: fmt lint policy.wasm unit

clean:
	$(CARGO) clean
	rm -f policy.wasm annotated-policy.wasm
