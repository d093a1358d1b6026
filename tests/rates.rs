//! Request-rate cells (`site bench --rates`) against the simulated engine, whose queue is
//! known: llama.cpp-shaped, 2 slots, a decode step of 10 ms + 0.5 ms a running request, 32
//! tokens an answer. A request holds a slot about 32 x 11 ms + its prefill, some 0.37 s, so
//! the server serves about 2 / 0.37 = 5.4 requests a second: 2 and 4 a second are kept up
//! with, 8 are not.
#![cfg(feature = "simulator")]

mod common;

use common::sim::{bench, SimArgs};
use common::*;
use serde_json::Value;

#[test]
fn open_loop_rates_are_served_below_capacity_and_saturated_above_it() {
    let sim = SimArgs::new().flavor("llamacpp").slots(2).steps(10, 1).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = [
        "--contexts",
        "256",
        "--rates",
        "2,4,8",
        "--arrival",
        "constant",
        "--seed",
        "11",
        "--duration",
        "4s",
        "--warmup-hold",
        "1s",
        "--max-output",
        "32",
        "--drain-timeout",
        "8s",
        "--run-id",
        "rates",
    ];
    let out = bench(d, &sim.url, &args);
    assert_ok(&out);
    let run = d.join("data/runs/rates");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(manifest["traffic"]["seed"], 11);
    assert_eq!(manifest["traffic"]["arrival"], "constant");
    let cells: Vec<Value> = std::fs::read_to_string(run.join("rates.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(cells.len(), 3);
    // Every request keeps when it was scheduled and when it went out: a constant schedule
    // 0.5 s apart, each sent within a few milliseconds of its instant.
    let low = &cells[0];
    let requests = low["requests"].as_array().unwrap();
    let gaps: Vec<f64> = requests
        .windows(2)
        .map(|w| w[1]["scheduled_s"].as_f64().unwrap() - w[0]["scheduled_s"].as_f64().unwrap())
        .collect();
    assert!(gaps.iter().all(|g| (g - 0.5).abs() < 1e-6), "{gaps:?}");
    for r in requests {
        let lag = r["send_s"].as_f64().unwrap() - r["scheduled_s"].as_f64().unwrap();
        assert!((0.0..0.05).contains(&lag), "sent {lag} s late: {r}");
    }
    assert_ok(&site_in(d, &["build"]));
    let page = std::fs::read_to_string(d.join("public/runs/rates/index.html")).unwrap();
    // The header row, then a row a cell.
    let rows = table_rows(&page, "class=\"rates\"")[1..].to_vec();
    let page_rows = rows.clone();
    assert_eq!(rows.len(), 3, "{rows:?}");
    // Below capacity: achieved is what was offered (8 requests in the 4 s window, all served).
    assert_eq!((rows[0][1].as_str(), rows[0][2].as_str(), rows[0][3].as_str()), ("2.00", "2.00", "8 · 0"));
    assert!(rows[0][10].starts_with("Kept up"), "{:?}", rows[0]);
    let achieved = |row: &[String]| row[2].parse::<f64>().unwrap();
    assert!((achieved(&rows[1]) - 4.0).abs() <= 0.12, "4 a second within 3%: {:?}", rows[1]);
    assert!(rows[1][10].starts_with("Kept up"), "{:?}", rows[1]);
    // Above: the two slots serve some 5.4 a second of the 8 offered, and the queue grows.
    assert!((4.5..6.5).contains(&achieved(&rows[2])), "{:?}", rows[2]);
    assert!(rows[2][10].starts_with("Saturated"), "{:?}", rows[2]);
    // The window's 32 requests all count: served late or failed, none dropped.
    let (done, failed) = rows[2][3].split_once(" · ").unwrap();
    assert_eq!(done.parse::<usize>().unwrap() + failed.parse::<usize>().unwrap(), 32, "{:?}", rows[2]);
    assert!(text_of(&page).contains("× 3 request rates (2, 4, 8 requests/s), constant arrivals"), "the run's summary");
    // Every request of every cell is a click away, and the figures are counted from it: the
    // download lists each request scheduled (warm-up too), and the window's rows of the
    // lowest rate give the page's completed count and TTFT median.
    assert!(page.contains("<a href=\"requests.csv.gz\" download>"), "the requests' link");
    let csv = gunzip_text(&d.join("public/runs/rates/requests.csv.gz"));
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name}: {header:?}"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let scheduled: usize = cells.iter().map(|c| c["requests"].as_array().unwrap().len()).sum();
    assert_eq!(rows.len(), scheduled);
    let low: Vec<&Vec<&str>> =
        rows.iter().filter(|r| r[col("rate_rps")] == "2" && r[col("in_window")] == "true").collect();
    assert_eq!(low.iter().filter(|r| r[col("outcome")] == "completed").count(), 8);
    let mut ttft: Vec<f64> = low.iter().map(|r| r[col("ttft_ms")].parse().unwrap()).collect();
    ttft.sort_by(f64::total_cmp);
    let median = (ttft[3] + ttft[4]) / 2.0;
    let shown: f64 = page_rows[0][5].split(" · ").next().unwrap().trim_end_matches(" ms").parse().unwrap();
    assert!(
        (median - shown).abs() <= 0.5 + 0.01 * shown,
        "median {median} ms from the requests, {shown} ms on the page"
    );
    for title in ["Latency against offered rate", "Achieved against offered rate", "Goodput against offered rate"] {
        assert!(page.contains(&format!("<title>{title}")), "{title}");
    }
    // Capacity at the chat objective (a first token within 2 s): between the rate kept up
    // with and the one that was not.
    let capacity = table_rows(&page, "class=\"rate-capacity\"")[1..].to_vec();
    let chat = capacity.iter().find(|r| r[1] == "chat").unwrap_or_else(|| panic!("{capacity:?}"));
    let rps: f64 = chat[2].parse().unwrap_or_else(|_| panic!("{chat:?}"));
    assert!((4.0..8.0).contains(&rps), "{chat:?}");
    // index.json and the front page carry the capacity of the site's first objective in
    // requests per second.
    let index: Value = serde_json::from_str(&std::fs::read_to_string(d.join("public/index.json")).unwrap()).unwrap();
    let slo = index["capacity_slo"].as_str().unwrap();
    let first = capacity.iter().find(|r| r[1] == slo).unwrap();
    let columns: Vec<&str> = index["columns"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let at = columns.iter().position(|c| *c == "capacity_rps").expect("a capacity_rps column");
    let listed = index["runs"][0][at].as_f64().unwrap();
    let (shown, rate) = match first[2].split_once(' ') {
        Some(("below", r)) => (format!("< {r} req/s"), r.to_string()),
        Some(("at", r)) => {
            (format!("≥ {} req/s", r.trim_start_matches("least ")), r.trim_start_matches("least ").to_string())
        }
        _ => (format!("{} req/s", first[2]), first[2].clone()),
    };
    assert!((listed - rate.parse::<f64>().unwrap()).abs() < 0.006, "{listed} against {first:?}");
    let front = text_of(&std::fs::read_to_string(d.join("public/index.html")).unwrap());
    assert!(front.contains(&format!("{shown} at 256")), "{shown}: {front}");
    // The objective's capacity board ranks it in requests per second.
    let board = text_of(&std::fs::read_to_string(d.join(format!("public/targets/{slo}-256/index.html"))).unwrap());
    assert!(board.contains("In requests per second") && board.contains(&shown), "{shown}: {board}");
    // A run of another traffic shape is not compared with it.
    let other = d.join("data/runs/rates-poisson");
    copy_dir(&run, &other);
    let text = std::fs::read_to_string(other.join("run.json")).unwrap().replace("\"constant\"", "\"poisson\"");
    std::fs::write(other.join("run.json"), text).unwrap();
    let out = site_in(d, &["diff", "rates", "rates-poisson", "--out", "cmp"]);
    assert!(!out.status.success() && stderr(&out).contains("two traffic shapes"), "{}", stderr(&out));
}

/// Two rate runs of one server and one of a server twice as slow a step, each at --repeat 3:
/// the pair of the same server is called neither faster nor slower, the slower server is
/// judged slower in its latencies and its capacity, and the gate fails on it.
#[test]
fn rate_runs_are_compared_cell_by_cell_with_their_repetitions() {
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let measure = |sim: &common::sim::SimEngine, id: &str| {
        let args = [
            "--contexts",
            "256",
            "--rates",
            "2,8",
            "--arrival",
            "constant",
            "--seed",
            "5",
            "--repeat",
            "3",
            "--duration",
            "3s",
            "--warmup-hold",
            "1s",
            "--max-output",
            "32",
            "--drain-timeout",
            "8s",
            "--run-id",
            id,
        ];
        assert_ok(&bench(d, &sim.url, &args));
    };
    let fast = SimArgs::new().flavor("llamacpp").slots(2).steps(10, 1).start();
    measure(&fast, "a");
    measure(&fast, "a2");
    let slow = SimArgs::new().flavor("llamacpp").slots(2).steps(20, 2).start();
    measure(&slow, "b");
    let same = site_in(d, &["diff", "a", "a2", "--out", "same", "--fail-on-regression"]);
    assert_ok(&same);
    assert!(!stdout(&same).contains("slower figures"), "{}", stdout(&same));
    let slower = site_in(d, &["diff", "a", "b", "--out", "ab", "--fail-on-regression"]);
    let said = stdout(&slower);
    assert!(!slower.status.success(), "{said}");
    assert!(said.contains("slower figures in: 256 at 2 req/s"), "{said}");
    let page = std::fs::read_to_string(d.join("ab/index.html")).unwrap();
    let rows = table_rows(&page, "class=\"rates-compare\"");
    // 256 at 2 a second: kept up on both, its end-to-end latency judged slower (each request
    // holds its slot twice as long).
    let low = rows.iter().find(|r| r[0] == "256" && r[1] == "2").unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(low[2], "Kept up · Kept up");
    assert!(low[5].contains("slower"), "{low:?}");
}

/// `--input-tokens` / `--output-tokens`: each request's lengths drawn from the seed, sent as
/// drawn (the simulator counts a word a token, and six for its chat template).
#[test]
fn drawn_lengths_are_sent_request_by_request() {
    let sim = SimArgs::new().steps(2, 0).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = [
        "--rates",
        "20",
        "--arrival",
        "poisson",
        "--seed",
        "9",
        "--input-tokens",
        "200:50",
        "--output-tokens",
        "20:5",
        "--duration",
        "3s",
        "--warmup-hold",
        "1s",
        "--run-id",
        "drawn",
    ];
    assert_ok(&bench(d, &sim.url, &args));
    let run = d.join("data/runs/drawn");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        (manifest["traffic"]["input_tokens"].as_str(), manifest["settings"]["contexts"][0].as_u64()),
        (Some("200:50"), Some(200))
    );
    let cell: Value =
        serde_json::from_str(std::fs::read_to_string(run.join("rates.jsonl")).unwrap().lines().next().unwrap())
            .unwrap();
    let requests = cell["requests"].as_array().unwrap();
    assert!(requests.len() > 30, "{}", requests.len());
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    for r in requests {
        let planned = &r["planned"];
        let (asked, served) = (planned["input_tokens"].as_f64().unwrap(), r["prompt_tokens"].as_f64().unwrap());
        assert!((served - asked).abs() <= 2.0, "asked {asked}, served {served}: {r}");
        assert_eq!(r["tokens"], planned["output_tokens"], "{r}");
        inputs.push(asked);
        outputs.push(planned["output_tokens"].as_f64().unwrap());
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let sd = |v: &[f64]| (v.iter().map(|x| (x - mean(v)).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
    assert!(
        (mean(&inputs) - 200.0).abs() < 25.0 && (25.0..75.0).contains(&sd(&inputs)),
        "{} {}",
        mean(&inputs),
        sd(&inputs)
    );
    assert!((mean(&outputs) - 20.0).abs() < 3.0 && sd(&outputs) > 2.0, "{:?}", outputs);
    assert_ok(&site_in(d, &["build"]));
    let page = text_of(&std::fs::read_to_string(d.join("public/runs/drawn/index.html")).unwrap());
    assert!(page.contains("prompts of 200:50 tokens (mean:sd), answers of 20:5 tokens (mean:sd)"), "{page}");
}

/// `--rates auto` on the simulator's known queue: 2 slots, a step of 10 ms + 1 ms a running
/// request, 32 tokens an answer, 256 prompt tokens (and 6 of its chat template) prefilled at
/// 20,000 a second. Two requests in flight take 32 x 12 ms + 262 / 20,000 s each, some
/// 0.397 s: the peak is 2 / 0.397, about 5.04 a second.
#[test]
fn auto_rates_probe_the_peak_and_measure_around_it() {
    let sim = SimArgs::new().flavor("llamacpp").slots(2).steps(10, 1).start();
    let ws = tempfile::tempdir().unwrap();
    let d = ws.path();
    let args = [
        "--contexts",
        "256",
        "--rates",
        "auto",
        "--arrival",
        "constant",
        "--seed",
        "2",
        "--duration",
        "3s",
        "--warmup-hold",
        "1s",
        "--max-output",
        "32",
        "--drain-timeout",
        "8s",
        "--run-id",
        "auto",
    ];
    let out = bench(d, &sim.url, &args);
    assert_ok(&out);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("data/runs/auto/run.json")).unwrap()).unwrap();
    let auto = &manifest["traffic"]["auto"];
    let analytic = 2.0 / (32.0 * 0.012 + 262.0 / 20_000.0);
    let peak = auto["peak_rps"].as_f64().unwrap();
    assert!((peak / analytic - 1.0).abs() < 0.1, "probe {peak} against {analytic}");
    assert_eq!(auto["concurrency"], 2, "the server's slots");
    let rates: Vec<f64> =
        manifest["traffic"]["rates_rps"].as_array().unwrap().iter().map(|r| r.as_f64().unwrap()).collect();
    assert_eq!(rates.len(), 8, "six shares of the peak and two near the knee: {rates:?}");
    assert!((rates[0] / peak - 0.1).abs() < 0.01 && (rates[7] / peak - 1.1).abs() < 0.01, "{rates:?}");
    // The knee brackets the server's capacity.
    let knee = auto["knee"].as_array().unwrap();
    let (lo, hi) = (knee[0].as_f64().unwrap(), knee[1].as_f64().unwrap());
    assert!(lo <= analytic * 1.03 && hi >= analytic * 0.97, "knee {lo}..{hi} against {analytic}");
    assert_eq!(std::fs::read_to_string(d.join("data/runs/auto/rates.jsonl")).unwrap().lines().count(), 8);
    assert_ok(&site_in(d, &["build"]));
    let page = text_of(&std::fs::read_to_string(d.join("public/runs/auto/index.html")).unwrap());
    assert!(page.contains("Rates chosen by a probe: 2 requests in flight at 256 completed"), "{page}");
}
