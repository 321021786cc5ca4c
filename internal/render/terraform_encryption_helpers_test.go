package render

import (
	"encoding/json"
	"io"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateencryption"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// variableTF is the root module of the encryption runs: an output set
// from a variable, so that each apply can change the state and write it
// again.
const variableTF = "variable \"v\" {\n  default = \"y\"\n}\n\noutput \"x\" {\n  value = var.v\n}\n"

// encryptedWorkdir is a workdir whose http backend keeps its state on a
// reference server, and whose commands run with a TF_ENCRYPTION of the
// test's choosing.
type encryptedWorkdir struct {
	*workdir
	// store holds the state the runner writes.
	store *stateserver.MemoryStore
}

// newEncryptedWorkdir renders an HttpBackend with spec.encryption for
// runner (nil: for no runner in particular), on a new reference server,
// and initializes runner's workdir with backend.tf and variableTF. The
// credentials Secret is env, as envFrom gives it; commands run through
// run may replace its TF_ENCRYPTION.
func newEncryptedWorkdir(t *testing.T, cli testtools.Runner, runner *backendsv1alpha1.Runner, env map[string][]byte) encryptedWorkdir {
	t.Helper()
	store := stateserver.NewMemoryStore()
	srv := httptest.NewServer(stateserver.New(store))
	t.Cleanup(srv.Close)
	files, err := HTTPFiles(backendsv1alpha1.HttpBackendSpec{
		Address: srv.URL + statePath,
		BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{
			Runner: runner,
			Encryption: &backendsv1alpha1.StateEncryption{
				PassphraseSecretRef: backendsv1alpha1.SecretKeyRef{Name: "passphrase"},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files.Needs, FeatureStateEncryption) {
		t.Fatalf("the files of spec.encryption need %v, not %s", files.Needs, FeatureStateEncryption)
	}
	w := newWorkdir(t, cli, map[string][]byte{BackendTFKey: files.BackendTF, "main.tf": []byte(variableTF)}, env)
	w.MustRun(t, "init", "-input=false", "-no-color")
	return encryptedWorkdir{workdir: w, store: store}
}

// run runs the runner with TF_ENCRYPTION set to tfEncryption, or unset
// when it is nil, in place of the credentials Secret's.
func (w encryptedWorkdir) run(t *testing.T, tfEncryption []byte, args ...string) (string, error) {
	t.Helper()
	wd := w.Workdir
	wd.Env = slices.DeleteFunc(slices.Clone(wd.Env), func(kv string) bool {
		return strings.HasPrefix(kv, EnvEncryption+"=")
	})
	if tfEncryption != nil {
		wd.Env = append(wd.Env, EnvEncryption+"="+string(tfEncryption))
	}
	return wd.Run(t, append(args, "-input=false", "-no-color")...)
}

// stored returns the state document the reference server holds.
func (w encryptedWorkdir) stored(t *testing.T) []byte {
	t.Helper()
	rec, err := w.store.Load(strings.TrimPrefix(statePath, "/state/"))
	if err != nil || rec.State == nil {
		t.Fatalf("loading the stored state: %v (found: %t)", err, rec.State != nil)
	}
	defer rec.State.Close()
	doc, err := io.ReadAll(io.NewSectionReader(rec.State, 0, rec.State.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// encryptedState is OpenTofu's envelope of an encrypted state or plan.
type encryptedState struct {
	Meta          map[string][]byte `json:"meta"`
	EncryptedData []byte            `json:"encrypted_data"`
	Version       string            `json:"encryption_version"`
}

// plainState is the part of a plain state the tests read.
type plainState struct {
	Version int    `json:"version"`
	Lineage string `json:"lineage"`
	Outputs map[string]struct {
		Value any `json:"value"`
	} `json:"outputs"`
}

// parseEnvelope returns doc as an encrypted state, and whether it is one:
// it has encrypted data and an encryption version, and no state version or
// outputs in clear text (only the serial and the lineage are).
func parseEnvelope(doc []byte) (encryptedState, bool) {
	var env encryptedState
	var inClear struct {
		Version *int            `json:"version"`
		Outputs json.RawMessage `json:"outputs"`
	}
	if json.Unmarshal(doc, &env) != nil || json.Unmarshal(doc, &inClear) != nil {
		return encryptedState{}, false
	}
	return env, env.Version != "" && len(env.EncryptedData) > 0 && inClear.Version == nil && inClear.Outputs == nil
}

// metaKeys returns the keys of the envelope's meta, sorted.
func (e encryptedState) metaKeys() []string {
	return slices.Sorted(maps.Keys(e.Meta))
}

// decrypt decrypts the envelope as the operator reads a state, with
// passphrase as the key of p's key provider. The keyring is proven
// against OpenTofu's own encryption in internal/stateencryption's tests.
func (e encryptedState) decrypt(p Passphrase, passphrase []byte) ([]byte, error) {
	keys := []stateencryption.Key{{Provider: p.ProviderName(), Passphrase: passphrase}}
	return stateencryption.NewKeyring(keys, nil).Decrypt(e.Meta, e.EncryptedData)
}

// stateOutput returns the output x of the plain state doc.
func stateOutput(t *testing.T, doc []byte) any {
	t.Helper()
	var s plainState
	if err := json.Unmarshal(doc, &s); err != nil || s.Version == 0 || s.Lineage == "" {
		t.Fatalf("not a plain state (%v):\n%s", err, doc)
	}
	return s.Outputs["x"].Value
}

// mustEncryptionEnv renders TF_ENCRYPTION for e.
func mustEncryptionEnv(t *testing.T, e EncryptionSecrets) []byte {
	t.Helper()
	env, err := EncryptionEnv(e)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// stateEncryptionProof runs init and apply with an HttpBackend with
// spec.encryption, its credentials Secret holding the rendered
// TF_ENCRYPTION as a runner pod's environment does: the runner read it
// when the state server received an encrypted state, which the
// passphrase decrypts, and did not when it stored a plain one.
func stateEncryptionProof(t *testing.T, runner testtools.Runner) (bool, string) {
	t.Helper()
	p := Passphrase{SecretName: "passphrase", Value: []byte(escapingString)}
	creds := HTTPCredentials(HTTPSecrets{})
	creds[EnvEncryption] = mustEncryptionEnv(t, EncryptionSecrets{Passphrase: p})
	w := newEncryptedWorkdir(t, runner, nil, creds)
	out, err := w.Run(t, "apply", "-auto-approve", "-input=false", "-no-color")
	if err != nil {
		t.Fatalf("%s apply: %v\n%s", runner.Name, err, out)
	}
	doc := w.stored(t)
	envelope, encrypted := parseEnvelope(doc)
	if !encrypted {
		if got := stateOutput(t, doc); got != "y" {
			t.Fatalf("%s stored a plain state with x = %v, want y", runner.Name, got)
		}
		return false, out + "\nstored:\n" + string(doc)
	}
	plain, err := envelope.decrypt(p, p.Value)
	if err != nil {
		t.Fatalf("%s stored a state the passphrase does not decrypt: %v", runner.Name, err)
	}
	if got := stateOutput(t, plain); got != "y" {
		t.Fatalf("%s stored an encrypted state with x = %v, want y", runner.Name, got)
	}
	return true, out
}
