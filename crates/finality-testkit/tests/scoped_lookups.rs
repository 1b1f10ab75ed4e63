//! Every fact has an owner: no statement of the SQL store finds a payment
//! (or an archived one) by `provider_ref` or `merchant_ref` without its
//! account. The store's lookups take a `finality_core::Scope` (see
//! `finality-store/src/payments/by_ref.rs`), so a Rust caller cannot forget
//! the account; this test holds the SQL under them to the same rule, so
//! that a new statement cannot forget it either. What does not hold yet is
//! listed with its count today, so the list can only shrink.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Statements still finding payments by reference across a provider's
/// accounts, per file (none: every one takes its account).
const STILL_UNSCOPED: &[(&str, usize)] = &[];

fn store_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .join("finality-store/src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Whether `sql` reads payments by a reference without naming the account.
fn unscoped_lookup(sql: &str) -> bool {
    let sql = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let reads = ["FROM payments", "FROM archived_payments"]
        .iter()
        .any(|t| sql.contains(t));
    let by_ref = [
        "provider_ref =",
        "merchant_ref =",
        "provider_ref IN",
        "merchant_ref IN",
    ]
    .iter()
    .any(|p| sql.contains(p));
    reads && by_ref && !sql.contains("account =")
}

#[derive(Default)]
struct Literals(Vec<String>);

impl<'a> Visit<'a> for Literals {
    fn visit_lit_str(&mut self, l: &'a syn::LitStr) {
        self.0.push(l.value());
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        // `format!("…", …)`: its template is a literal inside the tokens.
        if let Ok(args) = m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for a in &args {
                self.visit_expr(a);
            }
        }
    }
}

fn count(source: &str) -> usize {
    let file = syn::parse_file(source).expect("the store's sources parse");
    let mut l = Literals::default();
    l.visit_file(&file);
    l.0.iter().filter(|s| unscoped_lookup(s)).count()
}

#[test]
fn the_rule_sees_what_it_is_for() {
    assert!(unscoped_lookup(
        "SELECT id FROM payments WHERE provider = $1 AND provider_ref = $2"
    ));
    assert!(unscoped_lookup(
        "SELECT id FROM payments WHERE provider = $1 \n AND merchant_ref IN ($2, $3)"
    ));
    assert!(!unscoped_lookup(
        "SELECT id FROM payments WHERE provider = $1 AND account = $2 AND provider_ref = $3"
    ));
    assert!(!unscoped_lookup("SELECT id FROM payments WHERE id = $1"));
    assert_eq!(
        count(r#"fn f() { let s = format!("SELECT id FROM payments WHERE provider_ref = {x}"); }"#),
        1
    );
}

#[test]
fn every_store_lookup_by_reference_names_the_account() {
    let src = store_src();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for f in &files {
        let name = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let n = count(&std::fs::read_to_string(f).unwrap());
        let allowed = STILL_UNSCOPED
            .iter()
            .find(|(p, _)| *p == name)
            .map_or(0, |(_, n)| *n);
        if n > allowed {
            wrong.push(format!("{name}: {n} (allowed {allowed})"));
        }
    }
    assert!(
        wrong.is_empty(),
        "statements finding payments by reference without `account =` \
         (use payments::by_ref with a Scope):\n{}",
        wrong.join("\n")
    );
}
