use super::*;

/// The CLI prints errors as anyhow's chain (`{:#}`): the OS message must appear once.
#[test]
fn the_chain_names_the_os_error_once() {
    let os = io::Error::from_raw_os_error(24);
    let text = os.to_string();
    let chain = format!("{:#}", anyhow::Error::new(ServerError::Serve(os)));
    assert!(
        chain.starts_with("the exporter's server stopped: "),
        "{chain}"
    );
    assert_eq!(chain.matches(&text).count(), 1, "{chain}");
}
