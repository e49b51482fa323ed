//! The registry of diagnostic codes, and the diagnostics that carry them.
//!
//! Every problem nyl reports has a stable snake_case code from [`Code`]. A code is never reused for
//! another meaning, even after its rule is gone. The doc comment on each code is its reference text.

use std::fmt;

use crate::data::provenance::{Catalog, Loc};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// What kind of failure a code is, which decides the exit status: problems in the input exit 1,
/// usage and internal errors exit 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Input,
    Usage,
}

macro_rules! codes {
    ($( $(#[doc = $doc:literal])+ $variant:ident = $name:literal, $severity:ident, $class:ident; )+) => {
        /// A stable diagnostic code.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code { $( $(#[doc = $doc])+ $variant, )+ }

        impl Code {
            /// Every code, in registry order.
            pub const ALL: &'static [Code] = &[ $( Code::$variant, )+ ];

            /// The code as users see it: `missing_required_import`.
            pub fn name(self) -> &'static str {
                match self { $( Code::$variant => $name, )+ }
            }

            pub fn severity(self) -> Severity {
                match self { $( Code::$variant => Severity::$severity, )+ }
            }

            pub fn class(self) -> Class {
                match self { $( Code::$variant => Class::$class, )+ }
            }

            /// The reference text of the code (its doc comment).
            pub fn doc(self) -> &'static str {
                match self { $( Code::$variant => concat!($($doc, "\n"),+).trim_ascii(), )+ }
            }
        }
    };
}

codes! {
    /// A file is not valid YAML (or TOML, for `nyl.toml`). The message carries the parser's own
    /// explanation and position.
    YamlSyntax = "yaml_syntax", Error, Input;
    /// A mapping in a nyl object has the same key twice. Helm would silently keep the last one; nyl
    /// refuses, because the first one was almost certainly meant to count.
    DuplicateKey = "duplicate_key", Error, Input;
    /// A mapping in a file Helm reads (a chart's `values.yaml`, a values file, runtime values) or
    /// in Helm's output has the same key twice. Helm, kubectl and Argo CD keep the last value, and
    /// so does nyl; the warning names the file, line and key so the first can be removed.
    DuplicateKeyLastWins = "duplicate_key_last_wins", Warning, Input;
    /// A YAML document in an app or target file is not a mapping, or uses a key that is not a
    /// scalar.
    InvalidDocument = "invalid_document", Error, Input;
    /// A YAML document is nested deeper, or expands (through aliases) to more nodes, than the
    /// limits allow. This stops alias bombs and pathological inputs before they exhaust memory.
    RepositoryTooComplex = "repository_too_complex", Error, Input;
    /// A YAML file is larger than `limits.max_file_bytes` (default 4 MiB).
    FileTooLarge = "file_too_large", Error, Input;
    /// More YAML files were read than `limits.max_files` allows (default 2000).
    TooManyFiles = "too_many_files", Error, Input;
    /// The YAML read in one run adds up to more than `limits.max_total_bytes` (default 64 MiB).
    RepositoryTooLarge = "repository_too_large", Error, Input;
    /// A symbolic link or another file that is not a regular file stands where nyl reads files,
    /// or a link stands inside `render-tree`'s output directory where it writes them. nyl follows
    /// no links, so nothing outside the repository (or the output directory) is reached through one.
    NotRegularFile = "not_regular_file", Error, Input;
    /// A chart's `values.schema.json` (its own, a vendored subchart's, or one inside a packaged
    /// `charts/*.tgz`) names something outside itself: a `$ref`, `$dynamicRef`, `$recursiveRef`,
    /// or a `$id` below the root, that is not a same-document fragment (`#/$defs/x`; the root's
    /// own `$id` only names the document), a `$schema` other than a standard draft (draft-04 to
    /// 2020-12, or the unversioned `json-schema.org/schema`, which Helm takes as 2020-12), or a
    /// `$vocabulary`. Helm would load it, a file of the machine or any URL,
    /// so the chart is refused before Helm runs. A schema or package nyl cannot read is refused
    /// the same way.
    ExternalSchemaReference = "external_schema_reference", Error, Input;
    /// `[limits]` in a repository's `nyl.toml` sets a limit above the ceiling the operator set
    /// (its `NYL_MAX_*` variable, else the default). A repository may only lower its limits; the
    /// ceiling applies.
    LimitAboveCeiling = "limit_above_ceiling", Warning, Input;
    /// An `NYL_MAX_*` variable, the operator's ceiling for a limit, is not a whole number.
    InvalidCeiling = "invalid_ceiling", Error, Usage;
    /// A rendered app is larger than `limits.max_render_bytes` (default 64 MiB).
    RenderTooLarge = "render_too_large", Error, Input;
    /// A file holds invocations or HelmCharts, but no DeploymentTarget's `spec.apps` names it, so
    /// no target deploys it.
    AppUnassigned = "app_unassigned", Warning, Input;
    /// A glob in a DeploymentTarget's `spec.apps` matches no file or directory. Usually a typo; a
    /// tree rendered without the app would make the GitOps engine prune it. `render-tree
    /// --allow-empty` turns it into a warning.
    AppsGlobUnmatched = "apps_glob_unmatched", Error, Input;
    /// A glob in a DeploymentTarget's `spec.apps` cannot be read (an unclosed `{` or `[`, for
    /// example); the message says what is wrong. Globs know `*`, `?`, `**`, `{a,b}` and `[...]`.
    AppsGlobInvalid = "apps_glob_invalid", Error, Input;
    /// A target deploys no app (no `spec.apps` match, no layout app names it), or `render-tree
    /// --all-targets` finds no target with apps. Writing the empty tree would make Flux prune
    /// everything; `--allow-empty` says it is intended.
    NothingToDeploy = "nothing_to_deploy", Error, Input;
    /// A path named in `[project] targets_search_paths` of `nyl.toml` does not exist, so every
    /// target in it would silently be missing.
    SearchPathNotFound = "search_path_not_found", Error, Input;
    /// A file beside `Chart.yaml` has a name close to `nyl-component.yaml` (`nyl-component.yml`,
    /// `nyl-components.yaml`, another case). nyl reads only the exact name, so the contract and its
    /// required imports would be ignored: rename the file.
    MisnamedContract = "misnamed_contract", Error, Input;
    /// An optional value import's `from` is absent in every target that deploys the component, so
    /// it never applies anywhere; usually a typo in the pointer or in the target values.
    ImportNeverApplies = "import_never_applies", Warning, Input;
    /// A layout uses a placeholder (in `id`, `chart`, `values`, `target`, `namespace` or
    /// `release`) that its `app` pattern does not bind.
    UnresolvedPlaceholder = "unresolved_placeholder", Error, Input;
    /// Two layouts claim one app directory, or two layouts share a name.
    LayoutOverlap = "layout_overlap", Error, Input;
    /// A layout app's chart directory (or a values file that exists) is not what it must be: no
    /// `Chart.yaml`, or a values file that is not one YAML mapping.
    InvalidLayer = "invalid_layer", Error, Input;
    /// An app id (such as `prod.infra.cert-manager`) matches no layout app.
    AppNotFound = "app_not_found", Error, Input;
    /// A `Release`'s `spec.include` names a file that does not exist (or is no file).
    IncludeNotFound = "include_not_found", Error, Input;
    /// Runtime chart values (`-f` files, `--values-yaml`, the plugin's `values` parameter) were
    /// given for an app with several releases, or for every app of a target that deploys several,
    /// where it is not clear which one they are for.
    AmbiguousRuntimeValues = "ambiguous_runtime_values", Error, Input;
    /// The values a chart would receive violate its `values.schema.json`. Found before Helm runs,
    /// so the message names the layer and the file and line that set the offending value. Helm's
    /// own check still runs for what nyl cannot see (remote and packaged charts).
    ValuesSchemaViolation = "values_schema_violation", Error, Input;
    /// A value cannot be handed to Helm: `.inf` and `.nan` have no JSON form.
    UnsupportedValue = "unsupported_value", Error, Input;
    /// A nyl object (or `nyl.toml`) has a field its kind does not define. Usually a typo or a field
    /// at the wrong level.
    UnknownField = "unknown_field", Error, Input;
    /// A field has the wrong type or a value its kind does not accept.
    InvalidField = "invalid_field", Error, Input;
    /// A required field is absent.
    MissingField = "missing_field", Error, Input;
    /// A document's `apiVersion` belongs to nyl but names a version nyl does not know.
    UnknownApiVersion = "unknown_api_version", Error, Input;
    /// A document uses one of Nyl's older API groups (`gitops.nyl/v1`,
    /// `*.nyl.niklasrosenstein.github.com/v1`); the message names what Nyl calls it now.
    RenamedApiVersion = "renamed_api_version", Error, Input;
    /// A feature of Nyl that nyl does not offer: a Git chart source (`git+`), a `RemoteManifest`,
    /// a Kyverno policy Nyl applies at render time (its `apply-policy-scope` annotation), a
    /// secrets provider configured in `nyl-secrets.yaml` (other than Nyl's `null` one). The
    /// message names the feature and what to do instead; nothing is passed through.
    UnsupportedNylFeature = "unsupported_nyl_feature", Error, Input;
    /// A string of an app file holds template syntax (`{{`, `{%`) in a project that has not said
    /// whether its app files are templates (`templating` unset in nyl.toml, and the project is
    /// not in Nyl's shape). Passing the text on would deliver the expression literally:
    /// `templating = true` under `[project]` renders app files as Nyl does, `templating = false`
    /// passes such strings on as written (for charts that `tpl` their values).
    TemplateExpression = "template_expression", Error, Input;
    /// A template of an app file uses what nyl cannot offer: `secrets` (Nyl's secrets
    /// provider), `env` (the process environment), `lookup` (live cluster state) or `inputs`
    /// (Nyl's release inputs). The message
    /// names the expression and what to do instead; nothing of the file is rendered, never an
    /// empty string in its place.
    TemplateUnavailable = "template_unavailable", Error, Input;
    /// A template of an app file prints, iterates or filters a value that is not there (a key
    /// the target's values lack, or `values` in a render without `--target`). Guard optional
    /// values with `is defined` or the `default` filter; a truth test (`{% if values.x %}`) is
    /// allowed.
    TemplateUndefined = "template_undefined", Error, Input;
    /// A template of an app file cannot be rendered: a syntax error (Helm's `{{ .Values.x }}`
    /// meant for a chart's `tpl` is one: wrap it in `{% raw %}...{% endraw %}`, or set
    /// `templating = false`), an unknown filter, a failing filter, or a template that does too
    /// much work.
    TemplateError = "template_error", Error, Input;
    /// A document stands where its kind does not belong: a Cluster or DeploymentTarget in an app
    /// file (they are read from the targets search paths), or anything else in a targets search
    /// path.
    MisplacedDocument = "misplaced_document", Error, Input;
    /// A document in an app file is neither a nyl object nor a Kubernetes object (string
    /// `apiVersion` and `kind`, and `metadata.name` or `metadata.generateName`): chart values left
    /// beside an invocation, a `kustomization.yaml`, an object missing its name. Passed on, the
    /// GitOps engine would fail the whole app on it. Hidden files (names starting with `.`, such as
    /// Argo CD's `.argocd-source.yaml`) are never read from an app directory.
    NotAnObject = "not_an_object", Error, Input;
    /// A document with `apiVersion: k8s.nyl/v1` has a kind nyl does not define.
    UnknownKind = "unknown_kind", Error, Input;
    /// A name is not valid for what it names: a Helm release name (`metadata.name` of an
    /// invocation, lowercase RFC 1123, at most 53 characters), a namespace (RFC 1123 label, at most
    /// 63), or a component path.
    InvalidName = "invalid_name", Error, Input;
    /// A remote chart's repository, name or version (a HelmChart's `spec.chart`, or a remote
    /// shortcut `<base>#<chart>@<version>`) is not what Helm accepts there: a chart name of
    /// letters, digits, `.`, `_` and `-` not starting with `-`, a version of a version's or
    /// range's characters, a URL without spaces or control characters. Checked before Helm runs,
    /// so that nothing from a repository can reach Helm's command line as a flag.
    InvalidChartReference = "invalid_chart_reference", Error, Input;
    /// Two objects of one kind share one name (two Clusters, two DeploymentTargets, two
    /// invocations that would be the same Helm release in the same namespace, or two objects with
    /// the same group, kind, namespace and name in one app's output, or in two apps of one target
    /// that `render --target` or `render-tree` render together).
    DuplicateObject = "duplicate_object", Error, Input;
    /// No `nyl.toml` was found in the input path or any directory above it.
    ProjectNotFound = "project_not_found", Error, Input;
    /// An API version handed to Helm (from a Cluster's `spec.kubernetes.apiVersions`,
    /// `--api-versions` or `KUBE_API_VERSIONS`) is not `version`, `group/version` or
    /// `group/version/Kind`. Helm splits the flag's value at commas and reads only its first line,
    /// so an entry holding a comma, a newline or whitespace would not reach the chart as written.
    /// List each API version as an entry of its own.
    InvalidApiVersionEntry = "invalid_api_version_entry", Error, Input;
    /// `--target NAME` names neither a DeploymentTarget nor a Cluster.
    TargetNotFound = "target_not_found", Error, Input;
    /// A DeploymentTarget's `spec.clusterRef.name` (or its own name, by default) names no Cluster.
    ClusterNotFound = "cluster_not_found", Error, Input;
    /// An invocation's kind is neither an alias, a remote chart shortcut, nor a component directory
    /// (holding `Chart.yaml`) under a components search path.
    ComponentNotFound = "component_not_found", Error, Input;
    /// A HelmChart names a local chart by `spec.chart.name` alone (Nyl's form) and no
    /// `helm_chart_search_paths` entry (or, for a name with a `/`, no directory from the project
    /// root) holds it.
    ChartNotFound = "chart_not_found", Error, Input;
    /// A JSON Pointer in a contract is not valid RFC 6901 (empty, not starting with `/`, or with a
    /// `~` escape other than `~0` and `~1`), or has more than 256 tokens, the nesting limit of
    /// YAML documents.
    InvalidPointer = "invalid_pointer", Error, Input;
    /// Two value imports of one contract share a name.
    DuplicateImport = "duplicate_import", Error, Input;
    /// Two value imports of one contract have destinations that are equal or where one contains the
    /// other.
    ImportDestinationOverlap = "import_destination_overlap", Error, Input;
    /// A required value import's `from` is absent from the target values (or there is no target).
    /// Setting the destination in `spec` does not satisfy it: render with a target that provides
    /// the value, or exclude the import.
    MissingRequiredImport = "missing_required_import", Error, Input;
    /// The invocation's spec sets a scalar or sequence where an applied import's destination
    /// descends, so the imported value has nowhere to go.
    ImportConflict = "import_conflict", Error, Input;
    /// `valueImports.exclude` names an import that the component's contract does not declare.
    UnknownImportExclude = "unknown_import_exclude", Error, Input;
    /// A remote chart shortcut invocation names imports in `valueImports.exclude`; remote charts
    /// have no contract, so there is nothing to exclude.
    RemoteImportExclude = "remote_import_exclude", Error, Input;
    /// No `helm` binary was found: set `NYL_HELM` to its path or put it in a directory of `PATH`
    /// (only absolute entries of `PATH` are searched).
    HelmNotFound = "helm_not_found", Error, Usage;
    /// The `helm` binary is older than Helm 3.8, or its version cannot be read (including a
    /// `helm version` that does not answer within the Helm deadline).
    HelmVersionUnsupported = "helm_version_unsupported", Error, Usage;
    /// The helm in use is not Helm 4.3, whose rules nyl follows when it coalesces values over
    /// chart defaults itself (`nyl explain`, `nyl values --explain`, the `values.schema.json`
    /// check before Helm runs). Helm changed those rules (nulls) in 4.2 and may again; where they
    /// differ, what Helm renders is the authority. See docs/values.md.
    HelmRulesDiffer = "helm_rules_differ", Warning, Usage;
    /// `helm template` failed for a release. The message carries Helm's own explanation (a
    /// template error, a `values.schema.json` violation, a chart that cannot be fetched).
    HelmFailed = "helm_failed", Error, Input;
    /// `helm template` of a release was still running at its deadline (`--helm-timeout`,
    /// `NYL_HELM_TIMEOUT`, `limits.helm_timeout_seconds`; 30 s by default), and was stopped with
    /// every process it started. Usually a template that loops (`until` over a huge count).
    HelmTimeout = "helm_timeout", Error, Input;
    /// Helm printed more than one render may take in from it (`limits.max_render_bytes`, all
    /// releases together), and was stopped: what it printed is never kept in full.
    HelmOutputTooLarge = "helm_output_too_large", Error, Input;
    /// The render produced no Kubernetes object. With auto-sync and prune, Argo CD would delete
    /// every resource of the app, so an empty result is refused unless `--allow-empty` (or the
    /// `allow-empty` plugin parameter) says it is intended.
    EmptyRender = "empty_render", Error, Input;
    /// Chart output kept containing invocations deeper than the nesting limit (10).
    RenderDepthExceeded = "render_depth_exceeded", Error, Input;
    /// A chart's output invokes, directly or through other charts, the same release again.
    RenderCycle = "render_cycle", Error, Input;
    /// A path resolves outside the project root (through `..` or a symbolic link). nyl reads
    /// nothing outside the project, as Argo CD's repository sandbox demands.
    PathOutsideProject = "path_outside_project", Error, Input;
    /// An Argo CD plugin input is malformed: `ARGOCD_APP_PARAMETERS` is not the JSON Argo CD
    /// sends, or a parameter has the wrong type or an unknown name.
    InvalidParameters = "invalid_parameters", Error, Input;
    /// A path given on the command line does not exist or cannot be read.
    PathNotFound = "path_not_found", Error, Usage;
    /// A file could not be read.
    IoError = "io_error", Error, Usage;
    /// The inputs hold no invocation, so there is nothing to show.
    NoInvocations = "no_invocations", Warning, Input;
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One problem found in a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub loc: Option<Loc>,
    /// The object concerned, as `Kind/name`.
    pub object: Option<String>,
    /// Another place the problem involves (the first definition of a duplicate).
    pub related: Option<Loc>,
    /// The field concerned, as a dotted path (`spec.values`).
    pub path: Option<String>,
}

impl Diagnostic {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
            loc: None,
            object: None,
            related: None,
            path: None,
        }
    }

    pub fn related(mut self, loc: Loc) -> Self {
        self.related = Some(loc);
        self
    }

    pub fn at(mut self, loc: Loc) -> Self {
        self.loc = Some(loc);
        self
    }

    pub fn object(mut self, object: impl Into<String>) -> Self {
        self.object = Some(object.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    pub fn path(mut self, path: &str) -> Self {
        self.path = (!path.is_empty()).then(|| path.to_string());
        self
    }

    /// The diagnostic with its file and line spelled out, for printing.
    pub fn resolve(&self, catalog: &Catalog, target: Option<&str>) -> Issue {
        let mut message = self.message.clone();
        if let Some(related) = self.related {
            message.push_str(&format!(" (see {})", catalog.loc(related)));
        }
        Issue {
            severity: self.severity,
            code: self.code,
            message,
            file: self.loc.map(|l| catalog.file(l.file).to_string()),
            line: self.loc.map(|l| l.line).filter(|l| *l > 0),
            path: self.path.clone(),
            object: self.object.clone(),
            target: target.map(str::to_string),
        }
    }

    /// `FILE:LINE: error CODE: MESSAGE (Kind/name, path)`.
    pub fn render(&self, catalog: &Catalog) -> String {
        self.resolve(catalog, None).text()
    }
}

/// A diagnostic as printed: resolved against its catalog, so issues of several runs can be
/// gathered, compared and serialized.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Issue {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Issue {
    /// `FILE:LINE: SEVERITY CODE: MESSAGE (Kind/name, path, target T)`.
    pub fn text(&self) -> String {
        let mut out = String::new();
        if let Some(file) = &self.file {
            out.push_str(file);
            if let Some(line) = self.line {
                out.push_str(&format!(":{line}"));
            }
            out.push_str(": ");
        }
        out.push_str(&format!(
            "{} {}: {}",
            self.severity,
            self.code.name(),
            self.message
        ));
        let target = self.target.as_ref().map(|t| format!("target {t}"));
        let context: Vec<&str> = [&self.object, &self.path, &target]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        if !context.is_empty() {
            out.push_str(&format!(" ({})", context.join(", ")));
        }
        out
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Sorts diagnostics by file path, line and code, the order a reader expects; those without a file
/// come first.
pub fn sort(diags: &mut [Diagnostic], catalog: &Catalog) {
    let key = |d: &Diagnostic| {
        (
            d.loc.map(|l| catalog.file(l.file).to_string()),
            d.loc.map(|l| l.line),
            d.code,
            d.message.clone(),
        )
    };
    diags.sort_by_key(key);
}

/// The exit status for a run that produced these diagnostics: 0, 1 (input) or 2 (usage).
pub fn exit_status(diags: &[Diagnostic]) -> u8 {
    let errors = diags.iter().filter(|d| d.is_error());
    let mut status = 0;
    for d in errors {
        match d.code.class() {
            Class::Usage => return 2,
            Class::Input => status = 1,
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_and_documented() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            let name = code.name();
            assert!(seen.insert(name), "duplicate code {name}");
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !name.starts_with('_'),
                "{name} is not snake_case"
            );
            assert!(code.doc().len() > 20, "{name} has no reference text");
        }
    }

    #[test]
    fn usage_errors_exit_2_and_input_errors_exit_1() {
        let input = Diagnostic::new(Code::UnknownField, "x");
        let usage = Diagnostic::new(Code::PathNotFound, "x");
        let warning = Diagnostic::new(Code::NoInvocations, "x");
        assert_eq!(exit_status(std::slice::from_ref(&warning)), 0);
        assert_eq!(exit_status(&[warning, input.clone()]), 1);
        assert_eq!(exit_status(&[input, usage]), 2);
    }
}
