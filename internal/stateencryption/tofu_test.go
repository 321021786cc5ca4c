package stateencryption

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// tofuMainTF is the root module the tofu tests apply: outputs of several
// types, one sensitive, and no provider, so tofu downloads nothing.
const tofuMainTF = `variable "greeting" {
  type    = string
  default = "hello"
}

output "greeting" {
  value = var.greeting
}

output "answer" {
  value = 42
}

output "tags" {
  value = { team = "infra", greeting = var.greeting }
}

output "zones" {
  value = ["a", "b"]
}

output "token" {
  value     = "token-${var.greeting}"
  sensitive = true
}
`

// tofuKey is a pbkdf2 key provider of the tofu tests with its aes_gcm
// method, both named provider as the operator renders them.
type tofuKey struct {
	provider, passphrase string
}

// key returns the Key of k.
func (k tofuKey) key() Key {
	return Key{Provider: k.provider, Passphrase: []byte(k.passphrase)}
}

// tofuEncryption returns the TF_ENCRYPTION configuration that encrypts the
// state with primary and reads it with each fallback as well, enforced.
func tofuEncryption(primary tofuKey, fallbacks ...tofuKey) string {
	var hcl string
	for _, k := range append([]tofuKey{primary}, fallbacks...) {
		hcl += `key_provider "pbkdf2" "` + k.provider + `" {
  passphrase = "` + k.passphrase + `"
}
method "aes_gcm" "` + k.provider + `" {
  keys = key_provider.pbkdf2.` + k.provider + `
}
`
	}
	hcl += "state {\n  method   = method.aes_gcm." + primary.provider + "\n  enforced = true\n"
	for _, k := range fallbacks {
		hcl += "  fallback {\n    method = method.aes_gcm." + k.provider + "\n  }\n"
	}
	return hcl + "}\n"
}

// tofuOutput is an output as `tofu output -json` and a v4 state both
// give it.
type tofuOutput struct {
	Value     any  `json:"value"`
	Sensitive bool `json:"sensitive"`
}

// tofuWorkdir is a directory where tofu applies tofuMainTF.
type tofuWorkdir struct {
	testtools.Workdir
	// env is the clean environment, without TF_ENCRYPTION.
	env []string
}

// newTofuWorkdir writes tofuMainTF into a new directory and runs tofu init
// there.
func newTofuWorkdir(t *testing.T) *tofuWorkdir {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(tofuMainTF), 0o600); err != nil {
		t.Fatal(err)
	}
	env := testtools.TerraformEnv(t, dir)
	w := &tofuWorkdir{Workdir: testtools.Workdir{Bin: testtools.Tofu(t), Dir: dir, Env: env}, env: env}
	w.MustRun(t, "init", "-input=false")
	return w
}

// apply runs tofu apply with the encryption configuration encryption and
// args, and returns `tofu output -json` and the state file tofu wrote.
func (w *tofuWorkdir) apply(t *testing.T, encryption string, args ...string) (map[string]tofuOutput, envelope) {
	t.Helper()
	w.Env = append(slices.Clone(w.env), "TF_ENCRYPTION="+encryption)
	w.MustRun(t, append([]string{"apply", "-auto-approve", "-input=false"}, args...)...)
	var outputs map[string]tofuOutput
	if out := w.MustRun(t, "output", "-json"); json.Unmarshal([]byte(out), &outputs) != nil {
		t.Fatalf("tofu output -json is not JSON:\n%s", out)
	}
	raw, err := os.ReadFile(filepath.Join(w.Dir, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("the state file is not an encrypted state envelope: %v", err)
	}
	if env.EncryptionVersion != "v0" || len(env.EncryptedData) == 0 {
		t.Fatalf("the state file is not encrypted: encryption_version %q, %d bytes of data", env.EncryptionVersion, len(env.EncryptedData))
	}
	return outputs, env
}

// decryptOutputs decrypts env with keys and returns the outputs of the
// plain state.
func decryptOutputs(t *testing.T, keys []Key, env envelope) (map[string]tofuOutput, error) {
	t.Helper()
	plain, err := NewKeyring(keys, nil).Decrypt(env.Meta, env.EncryptedData)
	if err != nil {
		return nil, err
	}
	var state struct {
		Version int                   `json:"version"`
		Serial  int                   `json:"serial"`
		Lineage string                `json:"lineage"`
		Outputs map[string]tofuOutput `json:"outputs"`
	}
	if err := json.Unmarshal(plain, &state); err != nil {
		t.Fatalf("the decrypted state is not JSON: %v", err)
	}
	if state.Version != 4 || state.Serial != env.Serial || state.Lineage != env.Lineage {
		t.Errorf("decrypted state version %d, serial %d, lineage %q; want 4 and the envelope's %d, %q",
			state.Version, state.Serial, state.Lineage, env.Serial, env.Lineage)
	}
	return state.Outputs, nil
}

// TestDecryptTofuState encrypts states with the real tofu and decrypts them
// with a Keyring: one passphrase, then a rotation to a new passphrase with
// the old one as the fallback.
func TestDecryptTofuState(t *testing.T) {
	old := tofuKey{provider: KeyProviderName("tofu-passphrase", "passphrase"), passphrase: "the first passphrase of the state"}
	current := tofuKey{provider: KeyProviderName("tofu-passphrase-2", "passphrase"), passphrase: "the passphrase after the rotation"}
	w := newTofuWorkdir(t)

	oldOutputs, oldState := w.apply(t, tofuEncryption(old))
	if diff := cmp.Diff([]string{MetaKey(old.provider)}, slices.Sorted(maps.Keys(oldState.Meta))); diff != "" {
		t.Errorf("meta keys of the first state (-want +got):\n%s", diff)
	}
	// Rotate: the new passphrase encrypts, the old one still reads.
	newOutputs, newState := w.apply(t, tofuEncryption(current, old), "-var", "greeting=bonjour")
	if diff := cmp.Diff([]string{MetaKey(current.provider)}, slices.Sorted(maps.Keys(newState.Meta))); diff != "" {
		t.Errorf("meta keys of the rotated state (-want +got):\n%s", diff)
	}
	if len(oldOutputs) != 5 || !oldOutputs["token"].Sensitive {
		t.Fatalf("tofu output -json gave %d outputs, want 5 with token sensitive", len(oldOutputs))
	}
	if cmp.Equal(oldOutputs, newOutputs) {
		t.Fatal("the rotation apply changed no output")
	}
	wrong := Key{Provider: old.provider, Passphrase: []byte("not the passphrase of the state")}

	cases := map[string]struct {
		keys        []Key
		state       envelope
		wantOutputs map[string]tofuOutput
		wantErr     error
	}{
		"one passphrase":                      {keys: []Key{old.key()}, state: oldState, wantOutputs: oldOutputs},
		"wrong passphrase":                    {keys: []Key{wrong}, state: oldState, wantErr: ErrDecryptionFailed},
		"rotated state, new and old keys":     {keys: []Key{current.key(), old.key()}, state: newState, wantOutputs: newOutputs},
		"rotated state, new key only":         {keys: []Key{current.key()}, state: newState, wantOutputs: newOutputs},
		"rotated state, old key only":         {keys: []Key{old.key()}, state: newState, wantErr: ErrNoMatchingKey},
		"state before rotation, fallback":     {keys: []Key{current.key(), old.key()}, state: oldState, wantOutputs: oldOutputs},
		"state before rotation, new key only": {keys: []Key{current.key()}, state: oldState, wantErr: ErrNoMatchingKey},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decryptOutputs(t, tc.keys, tc.state)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Decrypt error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				for _, p := range []string{old.passphrase, current.passphrase, string(wrong.Passphrase)} {
					if strings.Contains(err.Error(), p) {
						t.Errorf("error %q quotes a passphrase", err)
					}
				}
				return
			}
			if diff := cmp.Diff(tc.wantOutputs, got); diff != "" {
				t.Errorf("decrypted outputs (-tofu output -json +decrypted):\n%s", diff)
			}
		})
	}
}
