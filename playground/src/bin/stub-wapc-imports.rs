//! Build step of `make playground`, between cargo and wasm-bindgen: turns the module's imports
//! from the waPC host (`wapc`) into local functions that trap, and drops the waPC exports.
//!
//! The policy crate is the waPC module too, and a cdylib exports every upstream `#[no_mangle]`
//! function, so `wapc_init` and `__guest_call` (and, through the handler table, the host-call
//! imports) come along. A browser has no waPC host and the page never calls it: lookups are
//! answered by a `MemoryCluster`. Without this step the JavaScript glue would import a module
//! named `wapc` that does not exist.
//!
//! Usage: `stub-wapc-imports IN.wasm OUT.wasm`

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use walrus::{ExportItem, ImportKind, Module};

    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        return Err("usage: stub-wapc-imports IN.wasm OUT.wasm".into());
    };
    let mut module = Module::from_file(input)?;
    let wapc_exports: Vec<_> = module
        .exports
        .iter()
        .filter(|e| matches!(e.item, ExportItem::Function(_)))
        .filter(|e| e.name == "wapc_init" || e.name == "__guest_call")
        .map(|e| e.id())
        .collect();
    for id in &wapc_exports {
        module.exports.delete(*id);
    }
    let imports: Vec<_> = module
        .imports
        .iter()
        .filter(|i| i.module == "wapc")
        .filter_map(|i| match i.kind {
            ImportKind::Function(f) => Some((i.name.clone(), f)),
            _ => None,
        })
        .collect();
    for (_, f) in &imports {
        module
            .replace_imported_func(*f, |(body, _)| {
                body.unreachable();
            })
            .map_err(|e| e.to_string())?;
    }
    if let Some(other) = module.imports.iter().find(|i| i.module == "wapc") {
        return Err(format!("import wapc.{} is not a function", other.name).into());
    }
    walrus::passes::gc::run(&mut module);
    module.emit_wasm_file(output)?;
    let names: Vec<&str> = imports.iter().map(|(n, _)| n.as_str()).collect();
    println!(
        "{output}: {} waPC exports dropped, {} waPC imports stubbed ({})",
        wapc_exports.len(),
        imports.len(),
        names.join(", ")
    );
    Ok(())
}

#[cfg(target_arch = "wasm32")]
fn main() {}
