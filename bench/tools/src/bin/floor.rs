//! Case (a), the floor: the least a Rust hook shim can do. Read the whole
//! payload from stdin, answer `{}`.

use std::io::{Read, Write};

fn main() {
    let mut payload = Vec::new();
    let _ = std::io::stdin().lock().read_to_end(&mut payload);
    let _ = std::io::stdout().lock().write_all(b"{}\n");
}
