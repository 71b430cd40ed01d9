//! Loading, `list` and `validate`.

use crate::common::Env;

#[test]
fn list_on_a_fresh_home_prints_exactly_the_five_builtins() {
    let env = Env::new();
    let run = env.run(&["list", "--json"]);
    run.code(0);
    let v = run.json();
    let ids: Vec<&str> = v["hooks"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "keryx.ctx-guard",
            "keryx.security-check-input",
            "keryx.security-check-output",
            "keryx.learning-observer",
            "keryx.impact-evidence"
        ]
    );
    assert!(v["hooks"].as_array().unwrap().iter().all(|h| h["enabled"] == true));
    assert_eq!(v["hooks"][3]["events"].as_array().unwrap().len(), 7);
}
