use super::*;

#[test]
fn secrets_are_redacted_and_other_words_kept() {
    let cmd = "env HF_TOKEN=hf_abc VLLM_X=1 OPENAI_API_KEY=sk-1 vllm serve m --api-key sk-secret --hf-token=hf_x --port 8000 --max-model-len 4096 --max-num-batched-tokens 8192";
    assert_eq!(
        redact_command(cmd),
        "env HF_TOKEN=<redacted> VLLM_X=1 OPENAI_API_KEY=<redacted> vllm serve m --api-key <redacted> --hf-token=<redacted> --port 8000 --max-model-len 4096 --max-num-batched-tokens 8192"
    );
}

#[test]
fn commands_without_secrets_are_kept_byte_for_byte() {
    for cmd in [
        "llama-server -m x.gguf --ctx-size 8192",
        "vllm serve m \\\n  --tp 4\t--port 8000",
        "a  'b c'",
        "(vllm serve m >log 2>&1 &) && curl -s http://h:8000/v1/models | jq .",
        "python -u bench.py --max-tokens 256",
        "vllm serve m --seed `date +%s` --port 8000",
        "vllm serve m --served-model-name \"$(hostname) m\"",
        "echo ${HOME:-a b} && echo 'x  y'",
    ] {
        assert_eq!(redact_command(cmd), cmd);
    }
}

#[test]
fn only_the_secret_word_changes() {
    let cases = [
        (
            "vllm serve m \\\n  --api-key s3cr3t \\\n  --port 8000",
            "vllm serve m \\\n  --api-key <redacted> \\\n  --port 8000",
        ),
        ("vllm serve m\t--api-key\ts3cr3t", "vllm serve m\t--api-key\t<redacted>"),
        ("vllm serve m --api-key \"a b\" --port 1", "vllm serve m --api-key <redacted> --port 1"),
        ("x --api-key='a b' y", "x --api-key=<redacted> y"),
        ("vllm serve --api-key s3cr3t|tee log", "vllm serve --api-key <redacted>|tee log"),
        ("vllm serve --api-key s3cr3t >log; echo done", "vllm serve --api-key <redacted> >log; echo done"),
        ("(vllm serve --api-key s3cr3t) && x", "(vllm serve --api-key <redacted>) && x"),
        ("vllm serve --api-key >log s3cr3t", "vllm serve --api-key >log s3cr3t"),
        (
            "bash -c \"HF_TOKEN=s3cr3t vllm serve m --api-key k2\"",
            "bash -c 'HF_TOKEN=<redacted> vllm serve m --api-key <redacted>'",
        ),
        ("env 'HF_TOKEN=s3 cr3t' vllm serve m", "env HF_TOKEN=<redacted> vllm serve m"),
        ("curl -H 'Authorization: Bearer s3cr3t' http://h/v1", "curl -H 'Authorization: <redacted>' http://h/v1"),
        ("curl --header=x-api-key:s3cr3t http://h", "curl '--header=x-api-key: <redacted>' http://h"),
        ("x --url http://me:s3cr3t@host:80/v1 --y", "x --url http://me:<redacted>@host:80/v1 --y"),
        ("x --url=https://tok3n@host/v1", "x --url=https://<redacted>@host/v1"),
        ("x --hf-token", "x --hf-token"),
        ("x --api-key \"unclosed secret", "x --api-key <redacted>"),
        ("echo $(cat --token s3cr3t) done", "echo $(cat --token <redacted>) done"),
        ("vllm serve m # key: api_key=s3cr3t", "vllm serve m # key: api_key=<redacted>"),
    ];
    for (cmd, want) in cases {
        assert_eq!(redact_command(cmd), want, "{cmd:?}");
    }
}

#[test]
fn forms_of_credentials_beyond_flags() {
    let cases = [
        ("curl -u admin:s3cr3t http://h", "curl -u admin:<redacted> http://h"),
        ("curl --user a:s3cr3t http://h", "curl --user a:<redacted> http://h"),
        ("curl --user=a:s3cr3t http://h", "curl --user=a:<redacted> http://h"),
        ("curl -uadmin:s3cr3t http://h", "curl -uadmin:<redacted> http://h"),
        (
            r#"vllm serve m --hf-overrides '{"api_key": "s3cr3t", "n": 2}'"#,
            r#"vllm serve m --hf-overrides '{"api_key": "<redacted>", "n": 2}'"#,
        ),
        ("curl -H Authorization -H Bearer s3cr3t", "curl -H Authorization -H Bearer <redacted>"),
        (
            "kubectl create secret generic k --from-literal=api_key=s3cr3t",
            "kubectl create secret generic k --from-literal=api_key=<redacted>",
        ),
        ("x --url 'http://h/v1?api_key=s3cr3t&m=1'", "x --url 'http://h/v1?api_key=<redacted>&m=1'"),
        ("OPENAI_BASE=http://h x sk-proj-s3cr3tabcdefghijklmn", "OPENAI_BASE=http://h x <redacted>"),
    ];
    for (cmd, want) in cases {
        let got = redact_command(cmd);
        assert!(!got.contains("s3cr3t"), "{cmd:?} -> {got:?}");
        assert_eq!(got, want, "{cmd:?}");
    }
}

#[test]
fn redacting_twice_changes_nothing() {
    for cmd in ["vllm serve m --api-key <redacted> --port 8000", "x --api-key=<redacted>|y", "curl -u a:<redacted>"] {
        assert_eq!(redact_command(cmd), cmd);
    }
}

mod generated {
    use super::super::*;
    use proptest::prelude::*;

    const FLAGS: &[&str] = &["--api-key", "--api-keys", "--hf-token", "--token", "--client-secret", "--db-password"];
    const ENVS: &[&str] = &["HF_TOKEN", "OPENAI_API_KEY", "MY_SECRET", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY"];
    const OPERATORS: &[&str] = &["|", "||", "&&", ";", " > log", ">>log", " 2>&1", " <in", "&", "\n"];
    /// Words and operators of commands that hold no secret.
    const INNOCENT: &[&str] = &[
        "vllm",
        "serve",
        "--port",
        "8000",
        "-m",
        "x.gguf",
        "--tp",
        "2",
        "echo",
        "+%s",
        "'a b'",
        "\"c d\"",
        "`date +%s`",
        "$(hostname)",
        "\"$(nproc) x\"",
        "A=b",
        "--max-tokens",
        "--max-num-batched-tokens=8192",
        "256",
        "|",
        "&&",
        ";",
        ">",
        "log",
        "(",
        ")",
        "#",
        "-u",
        "http://h:8000/v1",
        "--pad-token-id",
        "{\"n\": 1}",
    ];

    /// A secret written into a command in one of the ways a shell accepts.
    fn placed(secret: &str, flag: &str, env: &str, form: u8) -> String {
        let sq = format!("'{secret}'");
        let dq = format!("\"{secret}\"");
        match form % 22 {
            0 => format!("{flag} {secret}"),
            1 => format!("{flag}={secret}"),
            2 => format!("{flag}\t{secret}"),
            3 => format!("{flag} \\\n  {secret}"),
            4 => format!("{flag} {dq}"),
            5 => format!("{flag} {sq}"),
            6 => format!("{flag}={dq}"),
            7 => format!("{env}={secret}"),
            8 => format!("{env}={sq}"),
            9 => format!("env '{env}={secret}'"),
            10 => format!("bash -c \"{flag} {secret}\""),
            11 => format!("sh -c '{env}={secret} run'"),
            12 => format!("-H 'Authorization: Bearer {secret}'"),
            13 => format!("--url http://user:{secret}@host:8000/v1"),
            14 => format!("-u admin:{secret}"),
            15 => format!("--user=admin:{secret}"),
            16 => format!("--hf-overrides '{{\"api_key\": \"{secret}\"}}'"),
            17 => format!("Bearer {secret}"),
            18 => format!("--from-literal=api_key={secret}"),
            19 => format!("--seed `cat {flag} {secret}`"),
            20 => format!("--name \"$(cat {flag}={secret}) x\""),
            _ => format!("--url 'http://h/v1?token={secret}&x=1'"),
        }
    }

    /// The shell's reading of a command: its operators in order and how many words lie
    /// between them. Read by an independent parser (brush's), our mark read as one word.
    fn structure(cmd: &str) -> Vec<String> {
        let cmd = cmd.replace(REDACTED, "REDACTED");
        let tokens = brush_parser::tokenize_str(&cmd).expect("a generated command tokenizes");
        let mut shape = Vec::new();
        let mut words = 0;
        for t in &tokens {
            match t {
                brush_parser::Token::Word(..) => words += 1,
                brush_parser::Token::Operator(op, _) => {
                    shape.push(format!("{words} words"));
                    shape.push(op.clone());
                    words = 0;
                }
            }
        }
        shape.push(format!("{words} words"));
        shape
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn no_secret_survives_and_the_shell_structure_is_kept(
            secret in "[A-Za-z0-9_.+/-]{6,24}",
            flag in proptest::sample::select(FLAGS),
            env in proptest::sample::select(ENVS),
            form in any::<u8>(),
            sep in proptest::sample::select(&[" ", "\t", " \\\n  ", "  "][..]),
            op in proptest::sample::select(OPERATORS),
            group in any::<bool>(),
        ) {
            let secret = format!("Zq{secret}");
            let serve = format!("vllm{sep}serve{sep}model-x{sep}{}{sep}--port{sep}8000", placed(&secret, flag, env, form));
            let serve = if group { format!("( {serve} )") } else { serve };
            let cmd = format!("{serve}{op} tee{sep}out.txt");
            let out = redact_command(&cmd);
            prop_assert!(!out.contains(&secret), "{cmd:?} -> {out:?}");
            prop_assert_eq!(structure(&out), structure(&cmd), "{:?} -> {:?}", cmd, out);
            for kept in ["vllm", "serve", "model-x", "--port", "8000", "tee", "out.txt", op.trim()] {
                prop_assert!(out.contains(kept), "{} dropped: {:?} -> {:?}", kept, cmd, out);
            }
        }

        #[test]
        fn a_command_without_secrets_is_kept_byte_for_byte(
            words in proptest::collection::vec(proptest::sample::select(INNOCENT), 1..24),
            seps in proptest::collection::vec(proptest::sample::select(&[" ", "  ", "\t", " \\\n  ", ""][..]), 24),
        ) {
            let cmd: String = words.iter().zip(&seps).map(|(w, s)| format!("{w}{s}")).collect();
            prop_assert_eq!(redact_command(&cmd), cmd);
        }

        #[test]
        fn arbitrary_text_never_panics(cmd in "\\PC{0,80}") {
            let _ = redact_command(&cmd);
            let _ = crate::redact::Scrubber::new(["k3y".to_string()]).scrub_message(&cmd);
        }
    }
}

/// Credential forms of the fourth hostile pass: each value goes, nothing else changes.
#[test]
fn credential_forms_of_other_programs() {
    let cases = [
        ("docker login -p s3cr3t registry.io", "docker login -p <redacted> registry.io"),
        ("sudo podman login -u me -p s3cr3t quay.io", "sudo podman login -u me -p <redacted> quay.io"),
        (
            "echo s3cr3t | docker login --password-stdin registry.io",
            "echo <redacted> | docker login --password-stdin registry.io",
        ),
        (
            "printf '%s' \"s3cr3t\" | helm registry login --password-stdin r.io",
            "printf <redacted> <redacted> | helm registry login --password-stdin r.io",
        ),
        ("aws configure set aws_secret_access_key s3cr3t", "aws configure set aws_secret_access_key <redacted>"),
        ("npm config set //r.io/:_authToken s3cr3t", "npm config set //r.io/:_authToken <redacted>"),
        ("mysql -uroot -ps3cr3t db", "mysql -uroot -p<redacted> db"),
        (
            "curl 'https://a.blob.core.windows.net/c?sv=2022&sig=s3cr3t%3D&se=1'",
            "curl 'https://a.blob.core.windows.net/c?sv=2022&sig=<redacted>&se=1'",
        ),
        ("curl 'http://h/v1?api%5Fkey=s3cr3t&x=1'", "curl 'http://h/v1?api%5Fkey=<redacted>&x=1'"),
        (
            "python -c 'import os; os.environ[\"HF_TOKEN\"]=\"s3cr3t\"'",
            "python -c 'import os; os.environ[\"HF_TOKEN\"]=\"<redacted>\"'",
        ),
        (
            "curl https://api.telegram.org/bot123456:s3cr3t/sendMessage",
            "curl https://api.telegram.org/bot<redacted>/sendMessage",
        ),
        (
            "curl -X POST https://hooks.slack.com/services/T0/B1/s3cr3t",
            "curl -X POST https://hooks.slack.com/services/<redacted>",
        ),
        ("curl https://discord.com/api/webhooks/123/s3cr3t-x", "curl https://discord.com/api/webhooks/123/<redacted>"),
        ("vllm serve m --api-key $(echo s3cr3t) --port 8000", "vllm serve m --api-key <redacted> --port 8000"),
        ("vllm serve m --api-key `echo s3cr3t` --port 8000", "vllm serve m --api-key <redacted> --port 8000"),
        (
            "cat <<EOF >c.yaml\napi_key: s3cr3t\nport: 8000\nEOF",
            "cat <<EOF >c.yaml\napi_key: <redacted>\nport: 8000\nEOF",
        ),
        (
            "cat <<EOF >c.json\n{\n  \"token\": \"s3cr3t\",\n  \"n\": 1\n}\nEOF",
            "cat <<EOF >c.json\n{\n  \"token\": <redacted>\n  \"n\": 1\n}\nEOF",
        ),
        ("vllm serve m --hf-token hf_abcdefgh\\\nijklmnop1234 --port 1", "vllm serve m --hf-token <redacted> --port 1"),
        ("run hf_abcdefgh\\\nijklmnop1234", "run <redacted>"),
        (
            "echo '-----BEGIN PRIVATE KEY-----\ns3cr3tAAAA\n-----END PRIVATE KEY-----' > k.pem",
            "echo '-----BEGIN PRIVATE KEY-----<redacted>-----END PRIVATE KEY-----' > k.pem",
        ),
    ];
    for (cmd, want) in cases {
        let got = redact_command(cmd);
        assert!(!got.contains("s3cr3t") && !got.contains("ijklmnop"), "{cmd:?} -> {got:?}");
        assert_eq!(got, want, "{cmd:?}");
    }
}

/// Token formats of more providers, in a command and in free text.
#[test]
fn provider_token_formats() {
    for token in ["gsk_abcdefghij0123456789XY", "xai-abcdefghij0123456789XY", "r8_abcdefghij0123456789XY"] {
        assert_eq!(redact_command(&format!("x --model m {token}")), "x --model m <redacted>");
        assert_eq!(crate::redact::scrub_text(&format!("used {token} here")), "used <redacted> here");
    }
}

/// Commands that hold no secret stay byte for byte, though a name in them looks like one.
#[test]
fn look_alike_names_are_not_secrets() {
    for cmd in [
        "llama-server -m x.gguf --override-kv tokenizer.ggml.add_bos_token=bool:false",
        "vllm serve m --api-key-file /run/keys/k --port 8000",
        "docker login --password-stdin registry.io",
        "vllm serve m --hf-token --port 8000",
        "vllm serve org/sk-learn-text-classifier-model --port 8000",
        "docker run -p 8000:8000 vllm/vllm-openai",
        "mysql -p db",
        "x --eos-token '</s>' --pad_token_id 0",
        "x --offset -5",
    ] {
        assert_eq!(redact_command(cmd), cmd);
    }
}

#[test]
fn every_copy_of_a_redacted_value_goes() {
    let cases = [
        ("true --api-key s3cr3tK; echo printed s3cr3tK", "true --api-key <redacted>; echo printed <redacted>"),
        (
            "sh -c 'server --api-key s3cr3tK && echo s3cr3tK' ; echo again-s3cr3tK",
            "sh -c 'server --api-key <redacted> && echo <redacted>' ; echo again-<redacted>",
        ),
        ("x --api-key=s3cr3tK # s3cr3tK", "x --api-key=<redacted> # <redacted>"),
    ];
    for (cmd, want) in cases {
        assert_eq!(redact_command(cmd), want, "{cmd:?}");
    }
}

#[test]
fn the_secrets_taken_out_are_the_values_the_shell_passes_on() {
    let cases: [(&str, &[&str]); 7] = [
        ("server --api-key S3cr3tValue;next", &["S3cr3tValue"]),
        ("(cd /srv && server --api-key S3cr3tValue)", &["S3cr3tValue"]),
        ("server --api-key S3cr3tValue|cat", &["S3cr3tValue"]),
        ("server --api-key='a b c d' --port 8000", &["a b c d"]),
        ("sh -c \"HF_TOKEN=hfvalue123 server --api-key=k2k2k2\"", &["hfvalue123", "k2k2k2"]),
        ("server --port 8000 --model m", &[]),
        ("server -p 1 --api-key abc", &[]),
    ];
    for (cmd, want) in cases {
        let mut got = command_secrets(cmd);
        got.sort();
        let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(got, want, "{cmd:?}");
    }
}

#[test]
fn a_here_document_value_on_the_line_after_its_key_goes() {
    let cmd = "cat > cfg.json <<EOF\n{\n  \"api_key\":\n    \"s3cr3tValue\",\n  \"port\": 8000\n}\nEOF\nserver --config cfg.json";
    let out = redact_command(cmd);
    assert!(!out.contains("s3cr3tValue"), "{out}");
    assert!(out.contains("\"port\": 8000") && out.contains("server --config cfg.json"), "{out}");
}
