//! The Kubernetes manifests in `deploy/kubernetes/` are wired right: the
//! Indexed Job runs N shards (completions = parallelism = the N of
//! `--shard`), the index reaches `--shard` (`auto`, from
//! `JOB_COMPLETION_INDEX`) and the output name, every pod gets the same
//! `--start-at` and seed, the merge Job reads exactly the N files the
//! shards write, from the same volume; each container's arguments parse as
//! `goodput` flags; the image is multi-stage and runs as a non-root user.

use std::path::{Path, PathBuf};

use clap::Parser;
use goodput::cli::record::shard::parse_shard;
use goodput::cli::{Cli, Command};
use yaml_rust2::{Yaml, YamlLoader};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes")
}

fn load(name: &str) -> Yaml {
    let text = std::fs::read_to_string(dir().join(name)).expect("the manifest exists");
    let mut docs = YamlLoader::load_from_str(&text).expect("the manifest is YAML");
    assert_eq!(docs.len(), 1, "{name}: one document");
    docs.remove(0)
}

fn container(job: &Yaml) -> &Yaml {
    let containers = job["spec"]["template"]["spec"]["containers"]
        .as_vec()
        .expect("containers");
    assert_eq!(containers.len(), 1);
    &containers[0]
}

fn args(job: &Yaml) -> Vec<String> {
    container(job)["args"]
        .as_vec()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("a string argument").to_owned())
        .collect()
}

/// The value of `--name=value` among `args`.
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .find_map(|a| a.strip_prefix(&format!("--{name}=")))
}

/// What the container's env takes `name` from: (ConfigMap, key).
fn env_source<'a>(job: &'a Yaml, name: &str) -> Option<(&'a str, &'a str)> {
    container(job)["env"].as_vec()?.iter().find_map(|e| {
        (e["name"].as_str() == Some(name)).then(|| {
            let r = &e["valueFrom"]["configMapKeyRef"];
            (
                r["name"].as_str().unwrap_or(""),
                r["key"].as_str().unwrap_or(""),
            )
        })
    })
}

fn claim(job: &Yaml, mount: &str) -> String {
    let c = container(job);
    let volume = c["volumeMounts"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"].as_str() == Some(mount))
        .and_then(|m| m["name"].as_str())
        .expect("the traces directory is a mounted volume");
    job["spec"]["template"]["spec"]["volumes"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|v| v["name"].as_str() == Some(volume))
        .and_then(|v| v["persistentVolumeClaim"]["claimName"].as_str())
        .expect("the volume is a claim")
        .to_owned()
}

/// Kubernetes' `$(VAR)` expansion, with the values a pod would see.
fn expand(arg: &str, index: usize) -> String {
    arg.replace("$(JOB_COMPLETION_INDEX)", &index.to_string())
        .replace("$(START_AT)", "2026-12-01T07:00:00Z")
        .replace("$(SEED)", "42")
        .replace("$(TARGET_URL)", "http://vllm.default.svc:8000")
}

#[test]
fn the_indexed_job_runs_n_shards_from_one_start_and_seed_into_the_shared_volume() {
    let job = load("shards-job.yaml");
    assert_eq!(job["kind"].as_str(), Some("Job"));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let n = spec["completions"].as_i64().expect("completions") as usize;
    assert_eq!(spec["parallelism"].as_i64(), Some(n as i64));
    let a = args(&job);
    assert_eq!(a[0], "record");
    // The index reaches --shard through the environment: K = auto.
    assert_eq!(flag(&a, "shard"), Some(format!("auto/{n}").as_str()));
    for k in 0..n {
        let tag = parse_shard(flag(&a, "shard").unwrap(), Some(&k.to_string())).unwrap();
        assert_eq!((tag.index, tag.count), (k, n));
    }
    // The same start instant and seed for every pod: from one ConfigMap,
    // never from anything that differs between pods.
    assert_eq!(flag(&a, "start-at"), Some("$(START_AT)"));
    assert_eq!(flag(&a, "seed"), Some("$(SEED)"));
    assert_eq!(
        env_source(&job, "START_AT"),
        Some(("goodput-run", "start-at"))
    );
    assert_eq!(env_source(&job, "SEED"), Some(("goodput-run", "seed")));
    // Each pod writes its own file on the shared volume.
    let out = flag(&a, "out").unwrap();
    assert!(out.starts_with("/traces/") && out.contains("$(JOB_COMPLETION_INDEX)"));
    let volume = load("volume.yaml");
    assert_eq!(volume["kind"].as_str(), Some("PersistentVolumeClaim"));
    let pvc = volume["metadata"]["name"].as_str().unwrap();
    assert_eq!(claim(&job, "/traces"), pvc);
    assert_eq!(
        volume["spec"]["accessModes"][0].as_str(),
        Some("ReadWriteMany"),
        "pods on several nodes write to it"
    );
    // Non-root pods.
    let security = &job["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(security["runAsNonRoot"].as_bool(), Some(true));
    // Every pod's arguments are valid `goodput record` flags.
    for k in 0..n {
        let mut argv = vec!["goodput".to_owned()];
        argv.extend(a.iter().map(|x| expand(x, k)));
        let cli = Cli::try_parse_from(&argv).expect("the pod's arguments parse");
        let Command::Record(r) = cli.command else {
            panic!("record")
        };
        assert_eq!(r.out, PathBuf::from(format!("/traces/shard-{k}.json")));
        assert_eq!(r.seed, 42);
    }
}

#[test]
fn the_merge_job_reads_exactly_the_files_the_shards_write() {
    let shards = load("shards-job.yaml");
    let n = shards["spec"]["completions"].as_i64().unwrap() as usize;
    let out = flag(&args(&shards), "out").unwrap().to_owned();
    let job = load("merge-job.yaml");
    assert_eq!(job["kind"].as_str(), Some("Job"));
    let a = args(&job);
    let mut argv = vec!["goodput".to_owned()];
    argv.extend(a.iter().cloned());
    let cli = Cli::try_parse_from(&argv).expect("the merge arguments parse");
    let Command::Merge(m) = cli.command else {
        panic!("merge")
    };
    let expected: Vec<PathBuf> = (0..n).map(|k| PathBuf::from(expand(&out, k))).collect();
    assert_eq!(m.shards, expected);
    assert!(m.out.starts_with("/traces"));
    assert_eq!(claim(&job, "/traces"), claim(&shards, "/traces"));
}

#[test]
fn the_image_is_multi_stage_and_runs_as_a_non_root_user() {
    let text = std::fs::read_to_string(dir().join("Dockerfile")).unwrap();
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "a build stage and a runtime stage");
    assert!(froms[0].contains(" AS build"));
    assert!(text.contains("COPY --from=build"));
    let user = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("a USER line");
    let uid = user.split(':').next().unwrap();
    assert!(uid != "root" && uid != "0", "USER {user}");
    // tini is PID 1 and forwards SIGTERM to goodput, which writes its trace
    // (exit 143) instead of being SIGKILLed 30 s later with nothing written.
    assert!(text.contains("ENTRYPOINT [\"/usr/bin/tini\", \"--\", \"/usr/local/bin/goodput\"]"));
    assert!(text.contains("apt-get install -y --no-install-recommends tini"));
    assert!(text.contains("COPY --from=build /usr/bin/tini-static /usr/bin/tini"));
}
