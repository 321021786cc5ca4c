package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// tofuRunner is the tofu runner of testtools.Runners.
func tofuRunner(t *testing.T) testtools.Runner {
	t.Helper()
	for _, r := range testtools.Runners(t) {
		if r.Flavor == string(backendsv1alpha1.RunnerOpenTofu) {
			return r
		}
	}
	t.Fatal("testtools.Runners has no tofu")
	return testtools.Runner{}
}

// TestTofuEncryptsWithThePassphrase applies, with the real tofu and the
// rendered TF_ENCRYPTION, under passphrases holding every character HCL
// escapes, and decrypts the stored state with the passphrase's bytes as
// the Secret holds them: tofu read each passphrase literally.
func TestTofuEncryptsWithThePassphrase(t *testing.T) {
	tofu := tofuRunner(t)
	cases := map[string]struct {
		passphrase string
		// mistyped, when set, is the passphrase with one byte changed:
		// tofu must then fail to read the state.
		mistyped string
	}{
		"plain":              {passphrase: "correct horse battery staple"},
		"exactly 16 bytes":   {passphrase: "0123456789abcdef"},
		"quotes":             {passphrase: `say "hello" to 'them'`},
		"backslashes":        {passphrase: `C:\path\\to\n\"not an escape`},
		"control characters": {passphrase: "line one\nline two\r\n\ttab\x00nul\x7fdel\u2028"},
		"template sequences": {passphrase: "${x} %{ if true }y%{ endif } $${lit} %%{lit}",
			mistyped: "${x} %{ if true }y%{ endif } $${lit} %%{liT}"},
		"non-ASCII":      {passphrase: "ü日本🙂 passphrase – ∑"},
		"escaping-heavy": {passphrase: escapingString, mistyped: escapingString[:len(escapingString)-1] + "?"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := Passphrase{SecretName: "passphrase", Key: backendsv1alpha1.DefaultPassphraseKey, Value: []byte(tc.passphrase)}
			env := mustEncryptionEnv(t, EncryptionSecrets{Passphrase: p})
			w := newEncryptedWorkdir(t, tofu, &backendsv1alpha1.Runner{Flavor: backendsv1alpha1.RunnerOpenTofu}, map[string][]byte{EnvEncryption: env})
			if out, err := w.run(t, env, "apply", "-auto-approve"); err != nil {
				t.Fatalf("apply: %v\n%s", err, out)
			}
			doc := w.stored(t)
			envelope, ok := parseEnvelope(doc)
			if !ok {
				t.Fatalf("the stored state is not encrypted:\n%s", doc)
			}
			if diff := cmp.Diff([]string{stateencryption.MetaKey(p.ProviderName())}, envelope.metaKeys()); diff != "" {
				t.Errorf("meta keys (-want +got):\n%s", diff)
			}
			plain, err := envelope.decrypt(p, p.Value)
			if err != nil {
				t.Fatalf("decrypting the stored state with the Secret's bytes: %v", err)
			}
			if got := stateOutput(t, plain); got != "y" {
				t.Errorf("the decrypted state has x = %v, want y", got)
			}
			if tc.mistyped == "" {
				return
			}
			mistyped := p
			mistyped.Value = []byte(tc.mistyped)
			if out, err := w.run(t, mustEncryptionEnv(t, EncryptionSecrets{Passphrase: mistyped}), "plan"); err == nil {
				t.Errorf("plan with a mistyped passphrase read the state:\n%s", out)
			}
			if out, err := w.run(t, env, "plan"); err != nil {
				t.Errorf("plan with the passphrase: %v\n%s", err, out)
			}
		})
	}
}

// TestTofuEncryptionMigrations takes one state through the migrations
// spec.encryption's fallback serves, with the real tofu: encrypting a
// plain state, rotating the passphrase, and dropping the fallbacks. Each
// step runs tofu with the rendered TF_ENCRYPTION (none: nil) and says how
// the stored state must then be written.
func TestTofuEncryptionMigrations(t *testing.T) {
	tofu := tofuRunner(t)
	t.Parallel()
	a := Passphrase{SecretName: "tofu-passphrase", Value: []byte("passphrase A, 16 bytes or more")}
	b := Passphrase{SecretName: "tofu-passphrase", Key: "rotated", Value: []byte("passphrase B: \"quoted\" ${x}\n")}
	c := Passphrase{SecretName: "tofu-passphrase-c", Value: []byte("passphrase C, the last one")}
	steps := []struct {
		name    string
		secrets *EncryptionSecrets // nil: no TF_ENCRYPTION
		// command is "apply", which sets the output to value, or "plan",
		// which expects no changes.
		command, value string
		// wantFail is part of the output of a command that must fail.
		wantFail string
		// wantKey is the passphrase the stored state is then encrypted
		// with; nil: the state is plain.
		wantKey *Passphrase
	}{
		{name: "a plain state", command: "apply", value: "plain"},
		{name: "an enforced passphrase refuses the plain state", secrets: &EncryptionSecrets{Passphrase: a},
			command: "plan", wantFail: "unencrypted payload"},
		{name: "fallback to unencrypted: the plain state is read and written encrypted",
			secrets: &EncryptionSecrets{Passphrase: a, FallbackUnencrypted: true}, command: "apply", value: "a", wantKey: &a},
		{name: "A alone reads it", secrets: &EncryptionSecrets{Passphrase: a}, command: "plan", wantKey: &a},
		{name: "rotation with both fallbacks: written under B",
			secrets: &EncryptionSecrets{Passphrase: b, Fallback: &a, FallbackUnencrypted: true}, command: "apply", value: "b", wantKey: &b},
		{name: "A alone no longer reads it", secrets: &EncryptionSecrets{Passphrase: a}, command: "plan", wantFail: "decrypt"},
		{name: "rotation to C with B as the fallback",
			secrets: &EncryptionSecrets{Passphrase: c, Fallback: &b}, command: "apply", value: "c", wantKey: &c},
		{name: "C alone reads it", secrets: &EncryptionSecrets{Passphrase: c}, command: "plan", wantKey: &c},
	}
	w := newEncryptedWorkdir(t, tofu, &backendsv1alpha1.Runner{Flavor: backendsv1alpha1.RunnerOpenTofu, Version: "1.7"}, nil)
	value := ""
	for _, step := range steps {
		var env []byte
		if step.secrets != nil {
			env = mustEncryptionEnv(t, *step.secrets)
		}
		// A plan of the stored value has no changes (exit status 0) only
		// when tofu read the state.
		args := []string{"plan", "-detailed-exitcode", "-var", "v=" + value}
		if step.command == "apply" {
			args = []string{"apply", "-auto-approve", "-var", "v=" + step.value}
			value = step.value
		}
		out, err := w.run(t, env, args...)
		switch {
		case step.wantFail != "" && err == nil:
			t.Fatalf("%s: %s succeeded:\n%s", step.name, step.command, out)
		case step.wantFail != "" && !strings.Contains(out, step.wantFail):
			t.Fatalf("%s: %s failed without saying %q: %v\n%s", step.name, step.command, step.wantFail, err, out)
		case step.wantFail == "" && err != nil:
			t.Fatalf("%s: %s: %v\n%s", step.name, step.command, err, out)
		}
		doc := w.stored(t)
		envelope, encrypted := parseEnvelope(doc)
		if step.wantKey == nil && step.wantFail == "" {
			if encrypted {
				t.Fatalf("%s: the stored state is encrypted, want it plain:\n%s", step.name, doc)
			}
			if got := stateOutput(t, doc); got != value {
				t.Errorf("%s: x = %v, want %q", step.name, got, value)
			}
			continue
		}
		if step.wantKey == nil {
			continue
		}
		if !encrypted {
			t.Fatalf("%s: the stored state is not encrypted:\n%s", step.name, doc)
		}
		if diff := cmp.Diff([]string{stateencryption.MetaKey(step.wantKey.ProviderName())}, envelope.metaKeys()); diff != "" {
			t.Errorf("%s: meta keys (-want +got):\n%s", step.name, diff)
		}
		plain, err := envelope.decrypt(*step.wantKey, step.wantKey.Value)
		if err != nil {
			t.Fatalf("%s: decrypting: %v", step.name, err)
		}
		if got := stateOutput(t, plain); got != value {
			t.Errorf("%s: x = %v, want %q", step.name, got, value)
		}
	}
}

// TestTofuNormalizesPassphrases shows why EncryptionEnv refuses a
// passphrase that is not in Unicode normalization form C: tofu reads
// TF_ENCRYPTION's strings normalized, so it derives its key from other
// bytes than the Secret holds.
func TestTofuNormalizesPassphrases(t *testing.T) {
	tofu := tofuRunner(t)
	t.Parallel()
	const decomposed, composed = "cafe\u0301 passphrase, decomposed", "caf\u00e9 passphrase, decomposed"
	if bytes.Equal([]byte(decomposed), []byte(composed)) {
		t.Fatal("the two spellings are the same bytes")
	}
	p := Passphrase{SecretName: "passphrase", Value: []byte(decomposed)}
	if _, err := EncryptionEnv(EncryptionSecrets{Passphrase: p}); err == nil {
		t.Error("EncryptionEnv accepted a passphrase not in normalization form C")
	}
	env := writeEncryption(EncryptionSecrets{Passphrase: p}) // unchecked
	w := newEncryptedWorkdir(t, tofu, nil, nil)
	if out, err := w.run(t, env, "apply", "-auto-approve"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	envelope, ok := parseEnvelope(w.stored(t))
	if !ok {
		t.Fatal("the stored state is not encrypted")
	}
	if _, err := envelope.decrypt(p, []byte(decomposed)); err == nil {
		t.Error("the state decrypts with the Secret's bytes: tofu did not normalize them, and EncryptionEnv need not refuse them")
	}
	if _, err := envelope.decrypt(p, []byte(composed)); err != nil {
		t.Errorf("the state does not decrypt with the normalized passphrase either: %v", err)
	}
}
