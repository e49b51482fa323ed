//! Rendering: every release of the inputs through the real `helm template`, chart output that
//! holds invocations expanded again for the same target, every other document passed on as
//! written or as Helm printed it (namespaced chart objects given their release's namespace),
//! nyl's own kinds dropped. Nothing is returned unless the whole render succeeded.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::apps::pipeline::{self, Loaded, Session};
use crate::helm::cache::{self, Cache};
use crate::helm::remote::{self, Stop};
use crate::helm::values_schema::{self, Schemas};
use crate::helm::{Failure, Helm, Template};
use crate::process;
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::provenance::ObjectName;
use nyl_core::data::provenance::{Catalog, Loc};
use nyl_core::data::value::Node;
use nyl_core::data::yaml::{self, Limits, Mode};
use nyl_core::expansion::manifest::{self, Manifest, Output};
use nyl_core::expansion::Entry;
use nyl_core::project::objects::ChartSource;
use nyl_core::values::release::InvocationValues;
use nyl_core::values::release::Release;

/// How deep chart output may nest invocations.
pub const MAX_DEPTH: usize = 10;

#[derive(Clone, Debug)]
pub struct Request {
    pub inputs: pipeline::Request,
    /// `--kube-version` (or `KUBE_VERSION`); the Cluster's `kubeVersion` when `None`.
    pub kube_version: Option<String>,
    /// `--api-versions` (or `KUBE_API_VERSIONS`); the Cluster's `apiVersions` when empty.
    pub api_versions: Vec<String>,
    pub allow_empty: bool,
    /// Parallel Helm renders at most; `None`: the available cores, asked only when there is
    /// more than one thing to run (the answer costs some twenty system calls).
    pub jobs: Option<usize>,
    /// The render cache's directory; `None` disables it.
    pub cache_dir: Option<PathBuf>,
    pub cache: cache::Mode,
    pub cache_max_bytes: u64,
    /// How long one release may spend in Helm, pull and template (the operator's setting; `limits.helm_timeout_seconds`
    /// can lower it).
    pub helm_timeout: Duration,
    pub gate: Gate,
    /// Counts the releases rendered (shown on a terminal).
    pub progress: crate::progress::Progress,
    /// Whether a large release's output may stay in a file (its cache entry, or one of its own)
    /// and reach stdout from there: only for a run that writes the manifests as they are
    /// (YAML), so that nyl's memory does not grow with the output (docs/performance.md).
    pub stored_output: bool,
    /// The apps rendered side by side, this request's among them: their helms share the cores
    /// with its own ([`process::go_threads`]).
    pub apps_at_once: usize,
}

/// Which problems stop Helm from running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Gate {
    /// Any problem of the run (rendering: fail closed).
    #[default]
    AllInputs,
    /// Only problems of the app's own files (validation, which reports the rest anyway).
    AppInputs,
}

impl Gate {
    /// Whether the session's problems so far stop Helm.
    fn stops(self, session: &Session) -> bool {
        match self {
            Gate::AllInputs => session.has_errors(),
            Gate::AppInputs => session.app_has_errors(),
        }
    }
}

/// The rendered manifests in input order, or the problems that stopped the render.
#[derive(Default)]
pub struct Outcome {
    /// Shared by every diagnostic that leaves the render with it.
    pub catalog: Arc<Catalog>,
    pub manifests: Vec<Manifest>,
    pub diagnostics: Vec<Diagnostic>,
    /// The project's limits for reading YAML, for outputs that read the manifests' trees.
    pub limits: Limits,
}

/// What every app render of one run shares, built once and borrowed by each: the project as
/// loaded, the helm found (its `helm version` probe), the render cache (with its chart digests)
/// and the compiled values schemas. The renders of a run share one engine setting (cache
/// directory and mode, helm timeout): the first render's request sets up helm and the cache.
pub struct Run {
    pub loaded: Loaded,
    cache_dir: OnceLock<Option<PathBuf>>,
    helm: OnceLock<Result<Helm, Diagnostic>>,
    cache: OnceLock<Cache>,
    schemas: Schemas,
}

impl Run {
    pub fn new(loaded: Loaded) -> Run {
        Run {
            loaded,
            cache_dir: OnceLock::new(),
            helm: OnceLock::new(),
            cache: OnceLock::new(),
            schemas: Schemas::default(),
        }
    }

    /// The project of the request, loaded (every target, or `only` one: see [`Loaded::load`]),
    /// as a run of its own; `Err` with the catalog and problems when there is no usable project.
    pub fn of_request(req: &Request, only: Option<&str>) -> Result<Run, crate::project::NotLoaded> {
        Loaded::of_request(&req.inputs, only).map(Run::new)
    }

    /// The helm of the run, located once, with an output budget of its own for one render.
    fn helm(&self, req: &Request) -> Result<(Helm, &Cache), Diagnostic> {
        let helm = self.helm.get_or_init(|| {
            // Probes and entries are read only from a directory nobody else can write. The
            // remembered `helm version` answer serves `--no-cache` too: it is no render output.
            let probes = self.cache_dir(req).map(cache::probes_dir);
            let limits = self.loaded.config().limits;
            let timeout = limits.helm_timeout_seconds.map_or(req.helm_timeout, |s| {
                req.helm_timeout.min(Duration::from_secs(s))
            });
            Helm::start(probes.as_deref(), timeout, limits.max_render_bytes)
        });
        let helm = helm.as_ref().map_err(Clone::clone)?;
        let cache = self.cache.get_or_init(|| {
            let dir = self.cache_dir(req).map(Path::to_path_buf);
            Cache::new(dir, req.cache, req.cache_max_bytes, helm)
                .with_progress(req.progress.clone())
                .with_jobs(req.jobs)
                .with_stored(req.stored_output)
        });
        Ok((helm.for_render(), cache))
    }

    /// The render cache's directory, checked once per run.
    fn cache_dir(&self, req: &Request) -> Option<&Path> {
        self.cache_dir
            .get_or_init(|| req.cache_dir.as_deref().and_then(cache::open_dir))
            .as_deref()
    }

    /// Ends the run: the render cache is bounded and summed up once.
    pub fn finish(&self) {
        if let Some(cache) = self.cache.get() {
            cache.finish();
        }
    }

    /// Ends the run on a thread of its own while `deliver` (printing the output) runs: the
    /// entries still being stored and the cache's sweep are no part of the output, and a run
    /// that passes on megabytes need not wait for them before it starts printing. Returns when
    /// both are done. A run that stored nothing (a warm one) has nothing to wait for, and no
    /// thread is started for it.
    pub fn finish_beside<R>(&self, deliver: impl FnOnce() -> R) -> R {
        let worth_a_thread = self.cache.get().is_some_and(Cache::stored_any);
        std::thread::scope(|scope| {
            let finishing = worth_a_thread
                .then(|| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, || self.finish())
                        .ok()
                })
                .flatten();
            let delivered = deliver();
            match finishing {
                // A cache that failed to end (its panic is on stderr) changes nothing of the
                // output already delivered, nor the exit code that goes with it.
                Some(thread) => {
                    let _ = thread.join();
                }
                // Nothing to wait for, or no thread to spare: after the output, then.
                None => self.finish(),
            }
            delivered
        })
    }
}

/// Renders the request as a run of its own and passes its outcome to `deliver` (which prints
/// it) while the run ends beside it ([`Run::finish_beside`]).
pub fn render<R>(req: &Request, deliver: impl FnOnce(Outcome) -> R) -> R {
    // Its one target, when it names one, is all that its sessions select.
    let run = match Run::of_request(req, req.inputs.target.as_deref()) {
        Ok(run) => run,
        Err((catalog, diagnostics)) => {
            return deliver(Outcome {
                catalog,
                diagnostics,
                ..Outcome::default()
            })
        }
    };
    let outcome = render_in(&run, req);
    run.finish_beside(|| deliver(outcome))
}

/// Renders the request's apps within the run, on a copy of its loaded project.
pub fn render_in(run: &Run, req: &Request) -> Outcome {
    let (mut session, entries) = Session::start(&run.loaded, &req.inputs);
    let mut manifests = Vec::new();
    // Fail closed: with any problem in the inputs, Helm is not even run. Validation looks past
    // problems elsewhere in the project, to find every app's own.
    if !req.gate.stops(&session) {
        let mut tree = Tree {
            session: &mut session,
            run,
            jobs: Vec::new(),
            schema_checked: false,
        };
        let top = tree.nodes(entries, &[], None);
        if tree.run(req) {
            // Room for all at once: a release prints up to thousands, and each manifest moved
            // again as the list doubles is memory touched anew.
            manifests.reserve_exact(tree.count(&top));
            tree.flatten(top, &mut manifests);
            let kinds = &tree.session.project.config.cluster_scoped_kinds;
            manifest::place_namespaces(&mut manifests, kinds);
        }
        let duplicates = nyl_core::project::objects::duplicate_objects(
            manifests.iter().map(|m| (&m.head, m.loc())),
        );
        tree.session.diagnostics.extend(duplicates);
        let releases: Vec<&InvocationValues> = tree
            .jobs
            .iter()
            .filter(|j| j.admitted)
            .map(|j| &j.release.values)
            .collect();
        let mut problems = Vec::new();
        pipeline::check_releases(releases.into_iter(), &mut problems);
        session.diagnostics.extend(problems);
    }
    let max = session.project.config.limits.max_render_bytes;
    let size: u64 = manifests.iter().map(|m| m.text_len() as u64).sum();
    if size > max {
        session.diagnostics.push(Diagnostic::new(
            Code::RenderTooLarge,
            format!(
                "the rendered app has {size} bytes, more than {}",
                nyl_core::project::objects::Limits::describe("max_render_bytes", max)
            ),
        ));
    }
    session.take_project_warnings();
    let mut diagnostics = session.take_diagnostics();
    let failed = diagnostics.iter().any(Diagnostic::is_error);
    if !failed && manifests.is_empty() && !req.allow_empty {
        diagnostics.push(Diagnostic::new(
            Code::EmptyRender,
            "the render produced no Kubernetes objects; with auto-sync and prune Argo CD would \
             delete the whole app. Pass --allow-empty (plugin parameter allow-empty: true) if \
             that is intended",
        ));
    }
    Outcome {
        limits: session.project.budget().clone(),
        catalog: Arc::new(session.project.catalog),
        manifests: if failed { Vec::new() } else { manifests },
        diagnostics,
    }
}

/// A manifest, or a release whose output (once rendered) is more nodes.
enum Item {
    Manifest(Box<Manifest>),
    Release(usize),
}

struct Job {
    release: Release,
    /// The releases whose output this one came from, outermost first.
    chain: Vec<String>,
    /// Passed the cycle and depth checks, so Helm renders it.
    admitted: bool,
    output: Vec<Item>,
}

/// The render as a tree: releases are rendered level by level, each level in parallel, and
/// their output spliced in place, so the result is in input order whatever the parallelism.
struct Tree<'a> {
    session: &'a mut Session,
    run: &'a Run,
    jobs: Vec<Job>,
    /// Whether any release's values were checked against its chart's schema.
    schema_checked: bool,
}

impl Tree<'_> {
    /// The items of entries; `namespace` is the release's whose output they are, if any.
    fn nodes(
        &mut self,
        entries: Vec<Entry>,
        chain: &[String],
        namespace: Option<&str>,
    ) -> Vec<Item> {
        entries
            .into_iter()
            .map(|entry| match entry {
                Entry::Manifest(mut m) => {
                    m.release_namespace = namespace.map(str::to_string);
                    Item::Manifest(m)
                }
                Entry::Release(release) => {
                    self.jobs.push(Job {
                        release: *release,
                        chain: chain.to_vec(),
                        admitted: false,
                        output: Vec::new(),
                    });
                    Item::Release(self.jobs.len() - 1)
                }
            })
            .collect()
    }

    /// Renders every job, level by level; false when anything failed.
    fn run(&mut self, req: &Request) -> bool {
        let mut pending: Vec<usize> = (0..self.jobs.len()).collect();
        if pending.is_empty() {
            return true;
        }
        let (helm, cache) = match self.run.helm(req) {
            Ok(found) => found,
            Err(d) => {
                self.session.diagnostics.push(d);
                return false;
            }
        };
        let mut ok = true;
        while !pending.is_empty() {
            pending.retain(|&i| self.admit(i) && self.schema_ok(i));
            let at_once = process::at_once(req.jobs, pending.len());
            let go_threads = process::go_threads(req.apps_at_once * at_once);
            let values: Vec<String> = pending
                .iter()
                .map(|&i| {
                    nyl_core::data::yaml::to_helm_json(
                        &self.jobs[i].release.values.values.to_json(),
                    )
                })
                .collect();
            let templates: Vec<Template<'_>> = pending
                .iter()
                .zip(&values)
                .map(|(&i, values_json)| {
                    let release = &self.jobs[i].release;
                    Template {
                        release: &release.values.name,
                        namespace: &release.values.namespace,
                        chart: &release.chart,
                        values_json,
                        // The flags (or Argo CD's KUBE_* variables) win over the target's facts.
                        kube_version: req
                            .kube_version
                            .as_deref()
                            .or(release.kube_version.as_deref()),
                        api_versions: if req.api_versions.is_empty() {
                            &release.api_versions
                        } else {
                            &req.api_versions
                        },
                        include_crds: release.include_crds,
                        go_threads,
                    }
                })
                .collect();
            let max_schema_bytes = self.session.project.config.limits.max_total_bytes;
            let outputs = parallel(&templates, at_once, |t| match t.chart {
                ChartSource::Local(_) => cache.template(&helm, t).map_err(Stop::Template),
                ChartSource::Remote(remote) => {
                    remote::render(cache, &helm, t, remote, max_schema_bytes)
                }
            })
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| {
                    Err(Stop::Template(Failure::Failed(
                        "internal error: the render thread failed".to_string(),
                    )))
                })
            });
            // A helm that is not Helm 3.8 or newer renders nothing, whatever it printed: its
            // first renders ran while `helm version` was asked.
            if let Err(d) = helm.version() {
                self.session.diagnostics.push(d);
                return false;
            }
            let mut next = Vec::new();
            for (i, output) in pending.iter().copied().zip(outputs) {
                match output {
                    Ok(output) => next.extend(self.expand(i, output)),
                    Err(stop) => {
                        let problems = self.stopped(i, stop);
                        self.session.diagnostics.extend(problems);
                    }
                }
            }
            ok &= !req.gate.stops(self.session);
            pending = next;
        }
        if self.schema_checked {
            self.session.diagnostics.extend(
                helm.version()
                    .ok()
                    .and_then(|v| nyl_core::values::coalesce::rules_warning(&v)),
            );
        }
        ok && !req.gate.stops(self.session)
    }

    /// The diagnostics of a job that gave no output.
    fn stopped(&mut self, i: usize, stop: Stop) -> Vec<Diagnostic> {
        let v = &self.jobs[i].release.values;
        let object = ObjectName::new(&v.kind, &v.name).to_string();
        let (command, failure) = match stop {
            // Failure's own hint is for a template that loops.
            Stop::Pull(Failure::TimedOut(limit)) => {
                let d = Diagnostic::new(
                    Code::HelmTimeout,
                    format!(
                        "helm pull {} did not finish within {} s and was stopped; check that the \
                         chart repository answers, or raise --helm-timeout (NYL_HELM_TIMEOUT)",
                        v.chart,
                        limit.as_secs()
                    ),
                );
                return vec![d.at(v.loc).object(object)];
            }
            Stop::Pull(failure) => ("pull", failure),
            Stop::Template(failure) => ("template", failure),
            Stop::Refused(problems) => {
                let (loc, project) = (v.loc, &mut self.session.project);
                return project
                    .schema_reference_problems(problems)
                    .into_iter()
                    .map(|d| d.related(loc).object(&object))
                    .collect();
            }
        };
        let d = Diagnostic::new(
            failure.code(),
            format!("helm {command} {} {failure}", v.chart),
        );
        vec![d.at(v.loc).object(object)]
    }

    /// Checks a job against cycles and the depth limit before it is rendered.
    fn admit(&mut self, i: usize) -> bool {
        let job = &self.jobs[i];
        let v = &job.release.values;
        let key = job_key(v);
        let object = ObjectName::new(&v.kind, &v.name).to_string();
        let problem = if job.chain.contains(&key) {
            let path = job
                .chain
                .iter()
                .chain([&key])
                .cloned()
                .collect::<Vec<_>>()
                .join(" -> ");
            Diagnostic::new(
                Code::RenderCycle,
                format!("chart output invokes itself again: {path}"),
            )
        } else if job.chain.len() >= MAX_DEPTH {
            Diagnostic::new(
                Code::RenderDepthExceeded,
                format!(
                    "invocations nest deeper than {MAX_DEPTH} levels: {}",
                    job.chain.join(" -> ")
                ),
            )
        } else {
            self.jobs[i].admitted = true;
            return true;
        };
        self.session
            .diagnostics
            .push(problem.at(v.loc).object(object));
        false
    }

    /// Checks a job's values against its chart's `values.schema.json` before Helm runs.
    fn schema_ok(&mut self, i: usize) -> bool {
        // No links in the chart: Helm would follow them out of the repository.
        if let ChartSource::Local(dir) = &self.jobs[i].release.chart {
            if let Err(refused) = self.session.project.check_chart(dir) {
                refused.report_to(&mut self.session.diagnostics);
                return false;
            }
        }
        // A chart whose values.yaml failed is reported once and never goes to Helm.
        match values_schema::check(
            &mut self.session.project,
            &self.run.schemas,
            &self.jobs[i].release,
        ) {
            Ok(checked) => {
                self.schema_checked |= checked;
                true
            }
            Err(refused) => {
                refused.report_to(&mut self.session.diagnostics);
                false
            }
        }
    }

    /// Turns a job's output into its items: documents the scan was sure of pass as they are,
    /// the others (nyl's own kinds, or what only the full reader can tell) are read. Returns the
    /// new jobs among them.
    fn expand(&mut self, i: usize, mut output: Output) -> Vec<usize> {
        let v = &self.jobs[i].release.values;
        let file = self.session.project.catalog.add_file(format!(
            "{} (helm output of {}/{})",
            v.chart, v.namespace, v.name
        ));
        // Nested releases default to the parent release's namespace.
        let namespace = v.namespace.clone();
        let mut chain = self.jobs[i].chain.clone();
        chain.push(job_key(v));
        let mut entries = Vec::new();
        let mut problems = Vec::new();
        // The heads are moved into the manifests: a release prints up to thousands.
        for mut doc in std::mem::take(&mut output.docs) {
            match doc.head.take() {
                Some(head) if !manifest::needs_reading(Some(&head)) => {
                    entries.push(Entry::Manifest(Box::new(Manifest::scanned(
                        output.text(&doc),
                        head,
                        Loc::new(file, doc.line),
                    ))));
                }
                _ => {
                    let budget = self.session.project.budget();
                    if let Some(refused) = budget.refuse(file, doc.line) {
                        problems.push(refused);
                        break;
                    }
                    let Some(source) = output.source(&doc) else {
                        problems.push(
                            Diagnostic::new(
                                Code::IoError,
                                "internal error: a stored document to read was not read",
                            )
                            .at(Loc::new(file, doc.line)),
                        );
                        break;
                    };
                    let parsed =
                        yaml::parse_stream_from(source, file, doc.line, budget, Mode::Lenient);
                    problems.extend(yaml::with_template(source, parsed.diagnostics));
                    // Its output text: its own when it differs from its bytes.
                    let text = doc.text.as_deref().unwrap_or(source);
                    let docs = parsed.docs.into_iter().map(|node| yaml::Document {
                        node,
                        text: text.to_string(),
                    });
                    entries.extend(self.session.entries(docs.collect(), None, &namespace));
                }
            }
        }
        let failed = problems.iter().any(Diagnostic::is_error);
        self.session.diagnostics.extend(problems);
        if failed {
            return Vec::new();
        }
        let first_new = self.jobs.len();
        let nodes = self.nodes(entries, &chain, Some(&namespace));
        self.jobs[i].output = nodes;
        (first_new..self.jobs.len()).collect()
    }

    /// How many manifests [`Tree::flatten`] moves out of `items`.
    fn count(&self, items: &[Item]) -> usize {
        items
            .iter()
            .map(|item| match item {
                Item::Manifest(_) => 1,
                Item::Release(i) => self.count(&self.jobs[*i].output),
            })
            .sum()
    }

    /// Moves the manifests out in input order (a copy would double the render's memory).
    fn flatten(&mut self, items: Vec<Item>, out: &mut Vec<Manifest>) {
        for item in items {
            match item {
                Item::Manifest(m) => out.push(*m),
                Item::Release(i) => {
                    let children = std::mem::take(&mut self.jobs[i].output);
                    self.flatten(children, out);
                }
            }
        }
    }
}

fn job_key(v: &InvocationValues) -> String {
    format!("{} {}/{}", v.chart, v.namespace, v.name)
}

/// `f` over `items` on `workers` threads ([`process::at_once`]); results in the order of
/// `items`, `None` where `f` panicked (so a lost result can never pass for a missing one).
pub(crate) fn parallel<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<Option<R>> {
    nyl_core::parallel::map(items, workers, |(): &mut (), item| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(item))).ok()
    })
}

/// The manifests' trees, read now where they were not read before; every problem when the full
/// reader refuses any of them.
pub fn trees(outcome: &Outcome) -> Result<Vec<std::borrow::Cow<'_, Node>>, Vec<Diagnostic>> {
    let mut trees = Vec::new();
    let mut problems = Vec::new();
    for m in &outcome.manifests {
        match m.node(&outcome.limits) {
            Ok(node) => trees.push(node),
            Err(p) => problems.extend(p),
        }
    }
    if problems.is_empty() {
        Ok(trees)
    } else {
        Err(problems)
    }
}

/// One JSON array of the manifests of the outcomes, in order.
pub fn to_json<'a>(
    outcomes: impl IntoIterator<Item = &'a Outcome>,
) -> Result<String, Vec<Diagnostic>> {
    let mut array = Vec::new();
    for outcome in outcomes {
        array.extend(trees(outcome)?.iter().map(|n| n.to_json()));
    }
    let mut text = serde_json::to_string_pretty(&array).unwrap_or_else(|_| "[]".into());
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::parallel;

    #[test]
    fn parallel_keeps_the_order_of_its_items() {
        let items: Vec<u32> = (0..200).collect();
        let doubled: Vec<_> = items.iter().map(|i| Some(i * 2)).collect();
        for workers in [1, 4] {
            assert_eq!(parallel(&items, workers, |i| i * 2), doubled);
            assert_eq!(
                parallel(&items[..0], workers, |i| *i),
                Vec::<Option<u32>>::new()
            );
            assert_eq!(parallel(&items[..1], workers, |i| *i), vec![Some(0)]);
        }
    }

    #[test]
    fn an_item_that_panics_is_none_and_the_others_are_done() {
        let items: Vec<u32> = (0..50).collect();
        for workers in [1, 4] {
            let out = parallel(&items, workers, |&i| {
                assert!(i != 7, "item 7");
                i
            });
            let expected: Vec<_> = items.iter().map(|&i| (i != 7).then_some(i)).collect();
            assert_eq!(out, expected, "{workers}");
        }
    }
}
