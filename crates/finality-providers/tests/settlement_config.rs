//! `[providers.NAME.settlement]` as an operator writes it: each adapter's
//! credentials where they belong, a bad one refused at start naming its
//! field (`finality config check` and every start run `validate`).

#![allow(clippy::unwrap_used)] // test code: a panic is how a test reports

use finality_providers::config::ProviderConfig;

fn config(toml_text: &str) -> Result<ProviderConfig, String> {
    let cfg: ProviderConfig = toml::from_str(toml_text).map_err(|e| e.to_string())?;
    cfg.validate().map_err(|e| e.to_string())?;
    Ok(cfg)
}

const HOST_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

#[test]
fn paypal_needs_its_sftp_server_with_a_pinned_key() {
    let base =
        "adapter = \"paypal\"\nbase_url = \"https://api-m.paypal.com\"\napi_key_env = \"X\"\n";
    let ok = config(&format!(
        "{base}[settlement.sftp]\nhost = \"reports.paypal.com\"\nuser = \"u\"\n\
         host_key = \"reports.paypal.com {HOST_KEY}\"\nprivate_key_env = \"K\"\n"
    ))
    .unwrap();
    let s = ok.settlement_schedule().unwrap().unwrap();
    assert_eq!(
        (s.tz.name(), s.report.as_str()),
        ("America/Los_Angeles", "STL")
    );
    assert!(!s.announced);
    assert_eq!(
        ok.settlement.as_ref().unwrap().sftp.as_ref().unwrap().dir,
        "/ppreports/outgoing"
    );

    let no_sftp = config(&format!("{base}[settlement]\ngrace = \"2h\"\n")).unwrap_err();
    assert!(no_sftp.contains("settlement.sftp"), "{no_sftp}");
    let bad_key = config(&format!(
        "{base}[settlement.sftp]\nhost = \"h\"\nuser = \"u\"\nhost_key = \"AAAA\"\nprivate_key_env = \"K\"\n"
    ))
    .unwrap_err();
    assert!(bad_key.contains("host_key"), "{bad_key}");
    let both = config(&format!(
        "{base}[settlement.sftp]\nhost = \"h\"\nuser = \"u\"\nhost_key = \"{HOST_KEY}\"\n\
         private_key_env = \"K\"\npassword_env = \"P\"\n"
    ))
    .unwrap_err();
    assert!(both.contains("password_env"), "{both}");
    let adyen_creds = config(&format!(
        "{base}[settlement]\nuser = \"report@Company.X\"\npassword_env = \"P\"\n"
    ))
    .unwrap_err();
    assert!(adyen_creds.contains("settlement.user"), "{adyen_creds}");
}

#[test]
fn adyen_reports_are_downloaded_as_the_report_user() {
    let base = "adapter = \"adyen\"\nbase_url = \"https://ca-live.adyen.com\"\n";
    let ok = config(&format!(
        "{base}[settlement]\nuser = \"report_1@Company.Acme\"\npassword_env = \"P\"\n"
    ))
    .unwrap();
    assert!(ok.settlement_schedule().unwrap().unwrap().announced);
    config(&format!("{base}[settlement]\napi_key_env = \"K\"\n")).unwrap();
    for bad in [
        "[settlement]\ngrace = \"1h\"\n",
        "[settlement]\nuser = \"u\"\n",
        "[settlement]\nuser = \"u\"\npassword_env = \"P\"\napi_key_env = \"K\"\n",
    ] {
        let e = config(&format!("{base}{bad}")).unwrap_err();
        assert!(e.contains("report user"), "{bad}: {e}");
    }
    let sftp = config(&format!(
        "{base}[settlement]\napi_key_env = \"K\"\n[settlement.sftp]\nhost = \"h\"\nuser = \"u\"\n\
         host_key = \"{HOST_KEY}\"\npassword_env = \"P\"\n"
    ))
    .unwrap_err();
    assert!(sftp.contains("only PayPal"), "{sftp}");
}
