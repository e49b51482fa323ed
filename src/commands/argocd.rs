//! `nyl argocd generate` and `nyl argocd parameters`: the Argo CD plugin's commands.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use crate::apps::pipeline::Request;
use crate::expansion::render;
use crate::project::{self, Project};
use nyl_core::data::diagnostics::{self, Diagnostic};
use nyl_core::data::provenance::Catalog;
use nyl_core::repository::argocd;

use super::options::{engine_request, env_var, EngineArgs, Format};
use super::print::{report_diagnostics, write_stdout};
use super::render::print_outcome;

#[derive(Subcommand, Debug)]
pub(super) enum ArgocdCommand {
    /// The plugin's generate command: render the app directory (the working directory).
    Generate(EngineArgs),
    /// The plugin's dynamic parameters: announce the project's targets as JSON.
    Parameters,
}

pub(super) fn argocd_generate(engine: &EngineArgs) -> ExitCode {
    let settings = match argocd::settings(&env_var) {
        Ok(s) => s,
        Err(problems) => return ExitCode::from(report_diagnostics(problems, &Catalog::default())),
    };
    if let Some((namespace, name)) = &settings.app {
        tracing::info!(app = %name, app_namespace = ?namespace, target = ?settings.target, "argocd generate");
    }
    let app_dir = PathBuf::from(".");
    // The project is the app directory's, and `path` must stay inside it (checked when read).
    let path = match &settings.path {
        Some(p) => app_dir.join(p),
        None => app_dir.clone(),
    };
    let root = match plugin_root(settings.source_path.as_deref()) {
        Ok(root) => root,
        Err(d) => return ExitCode::from(report_diagnostics(vec![d], &Catalog::default())),
    };
    // Argo CD never sends the default `parameters` announced: apply it here.
    let target = settings.target.or_else(|| {
        let (project, _) = Project::load(root.clone(), None).ok()?;
        argocd::default_target(&project.target_names()).cloned()
    });
    let request = render::Request {
        inputs: Request {
            paths: vec![path],
            root: Some(root),
            target,
            default_namespace: settings
                .app_namespace
                .unwrap_or_else(|| "default".to_string()),
            values: settings
                .values
                .map(crate::apps::pipeline::RuntimeValues::yaml)
                .into_iter()
                .collect(),
            target_values: settings.target_values,
        },
        kube_version: settings.kube_version,
        api_versions: settings.api_versions,
        allow_empty: settings.allow_empty,
        stored_output: true,
        ..engine_request(engine, crate::progress::Progress::default())
    };
    render::render(&request, |mut outcome| {
        outcome.diagnostics = outcome
            .diagnostics
            .into_iter()
            .map(argocd::plugin_wording)
            .collect();
        print_outcome(outcome, Format::Yaml)
    })
}

/// The project of the plugin's working directory (the app directory), found no higher than the
/// repository root Argo CD unpacked.
pub(super) fn plugin_root(source_path: Option<&str>) -> Result<PathBuf, Diagnostic> {
    let cwd = std::env::current_dir()
        .map_err(|e| Diagnostic::new(diagnostics::Code::PathNotFound, format!(".: {e}")))?;
    let boundary = argocd::repository_root(&cwd, source_path)?;
    project::find_root_within(&cwd, Some(&boundary))
}

pub(super) fn argocd_parameters() -> ExitCode {
    let targets = match plugin_root(env_var("ARGOCD_APP_SOURCE_PATH").as_deref())
        .map_err(|d| (Arc::default(), vec![d]))
        .and_then(|root| Project::load(root, None))
    {
        Ok((project, _)) => project.target_names(),
        // Announcements must not fail the UI: without a usable project, offer no targets.
        Err(_) => Vec::new(),
    };
    let mut text = argocd::announcements(&targets).to_string();
    text.push('\n');
    write_stdout(&text)
}
