//! Loading `nyl.toml` from any text: a config or diagnostics that point at its lines, never a
//! panic; a config it accepts keeps every search path inside the project.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nyl_render::objects::Limits;
use nyl_render::project::parse_config;
use nyl_render_fuzz::{assert_lines_in, text, FILE};

fuzz_target!(|data: &[u8]| {
    let Some(text) = text(data) else { return };
    match parse_config(text, FILE, &Limits::default()) {
        Ok((config, warnings)) => {
            assert_lines_in(text, &warnings);
            let paths = config
                .components_search_paths
                .iter()
                .chain(&config.targets_search_paths);
            for path in paths {
                assert!(
                    !path.starts_with('/') && !path.split('/').any(|s| s == ".."),
                    "{path:?}"
                );
            }
        }
        Err(diags) => {
            assert!(!diags.is_empty());
            assert_lines_in(text, &diags);
        }
    }
});
