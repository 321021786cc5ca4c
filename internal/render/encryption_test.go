package render

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateencryption"
)

// Passphrases of the encryption tests. Each is distinctive, so that a
// test can tell an error or a file that holds one.
var (
	testPassphrase = Passphrase{SecretName: "tofu", Key: "passphrase", Value: []byte("0123456789abcdef")}
	testPrevious   = Passphrase{SecretName: "tofu", Key: "previous", Value: []byte("fedcba9876543210")}
)

// encryptionCases are the TF_ENCRYPTION golden cases: each name is also
// the directory of its golden file under testdata/encryption/.
func encryptionCases() map[string]EncryptionSecrets {
	return map[string]EncryptionSecrets{
		"passphrase":                    {Passphrase: testPassphrase},
		"previous_passphrase":           {Passphrase: testPassphrase, Fallback: &testPrevious},
		"unencrypted":                   {Passphrase: testPassphrase, FallbackUnencrypted: true},
		"previous_and_unencrypted":      {Passphrase: testPassphrase, Fallback: &testPrevious, FallbackUnencrypted: true},
		"escaping":                      {Passphrase: Passphrase{SecretName: "tofu.passphrase", Key: "tofu-key", Value: []byte(escapingString + "\x00\x7f\u2028")}},
		"default_key_and_other_secrets": {Passphrase: Passphrase{SecretName: "a", Value: testPassphrase.Value}, Fallback: &Passphrase{SecretName: "b", Value: testPrevious.Value}},
	}
}

func TestEncryptionEnvGolden(t *testing.T) {
	cases := encryptionCases()
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := EncryptionEnv(e)
			if err != nil {
				t.Fatalf("EncryptionEnv: %v", err)
			}
			checkGoldenFile(t, filepath.Join("testdata", "encryption", name, EnvEncryption), got)
			again, err := EncryptionEnv(e)
			if err != nil || !bytes.Equal(got, again) {
				t.Errorf("a second rendering differs (%v):\n%s", err, again)
			}
		})
	}
	checkNoStaleGolden(t, "encryption", cases)
}

// TestEncryptionEnvStructure parses each rendered TF_ENCRYPTION as HCL and
// checks what OpenTofu is told: the key providers and their passphrases,
// as the parser reads them, the methods, and each target's chain.
func TestEncryptionEnvStructure(t *testing.T) {
	type target struct {
		Chain    []string // the methods, primary first
		Enforced bool
	}
	type want struct {
		Passphrases map[string]string // by key provider name
		Methods     []string          // "type.name"
		Targets     map[string]target // state and plan
	}
	name := func(p Passphrase) string { return stateencryption.KeyProviderName(p.SecretName, p.key()) }
	a, b := name(testPassphrase), name(testPrevious)
	enforced := func(chain ...string) map[string]target {
		return map[string]target{"state": {Chain: chain, Enforced: true}, "plan": {Chain: chain, Enforced: true}}
	}
	open := func(chain ...string) map[string]target {
		return map[string]target{"state": {Chain: chain}, "plan": {Chain: chain}}
	}
	cases := encryptionCases()
	wants := map[string]want{
		"passphrase": {
			Passphrases: map[string]string{a: string(testPassphrase.Value)},
			Methods:     []string{"aes_gcm." + a},
			Targets:     enforced("method.aes_gcm." + a),
		},
		"previous_passphrase": {
			Passphrases: map[string]string{a: string(testPassphrase.Value), b: string(testPrevious.Value)},
			Methods:     []string{"aes_gcm." + a, "aes_gcm." + b},
			Targets:     enforced("method.aes_gcm."+a, "method.aes_gcm."+b),
		},
		"unencrypted": {
			Passphrases: map[string]string{a: string(testPassphrase.Value)},
			Methods:     []string{"aes_gcm." + a, "unencrypted.migration"},
			Targets:     open("method.aes_gcm."+a, "method.unencrypted.migration"),
		},
		"previous_and_unencrypted": {
			Passphrases: map[string]string{a: string(testPassphrase.Value), b: string(testPrevious.Value)},
			Methods:     []string{"aes_gcm." + a, "aes_gcm." + b, "unencrypted.migration"},
			Targets:     open("method.aes_gcm."+a, "method.aes_gcm."+b, "method.unencrypted.migration"),
		},
	}
	for caseName, w := range wants {
		t.Run(caseName, func(t *testing.T) {
			src, err := EncryptionEnv(cases[caseName])
			if err != nil {
				t.Fatal(err)
			}
			f, diags := hclsyntax.ParseConfig(src, EnvEncryption, hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatalf("parsing: %s\n%s", diags, src)
			}
			got := want{Passphrases: map[string]string{}, Targets: map[string]target{}}
			for _, block := range f.Body.(*hclsyntax.Body).Blocks {
				switch block.Type {
				case "key_provider":
					v, diags := block.Body.Attributes["passphrase"].Expr.Value(nil)
					if diags.HasErrors() {
						t.Fatal(diags)
					}
					got.Passphrases[block.Labels[1]] = v.AsString()
					ref := "key_provider.pbkdf2." + block.Labels[1]
					if !hasMethodWithKeys(f.Body.(*hclsyntax.Body), block.Labels[1], ref) {
						t.Errorf("no aes_gcm method %s with keys = %s", block.Labels[1], ref)
					}
				case "method":
					got.Methods = append(got.Methods, block.Labels[0]+"."+block.Labels[1])
				case "state", "plan":
					var tg target
					if attr, ok := block.Body.Attributes["enforced"]; ok {
						v, _ := attr.Expr.Value(nil)
						tg.Enforced = v.True()
					}
					for body := block.Body; body != nil; {
						tg.Chain = append(tg.Chain, traversalString(t, body.Attributes["method"].Expr))
						var next *hclsyntax.Body
						for _, fb := range body.Blocks {
							if fb.Type == "fallback" {
								next = fb.Body
							}
						}
						body = next
					}
					got.Targets[block.Type] = tg
				default:
					t.Errorf("unexpected block %s", block.Type)
				}
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("TF_ENCRYPTION (-want +got):\n%s\n%s", diff, src)
			}
		})
	}
}

// hasMethodWithKeys reports whether body has an aes_gcm method
// named name whose keys are the traversal ref.
func hasMethodWithKeys(body *hclsyntax.Body, name, ref string) bool {
	for _, b := range body.Blocks {
		if b.Type != "method" || b.Labels[0] != "aes_gcm" || b.Labels[1] != name {
			continue
		}
		keys, ok := b.Body.Attributes["keys"]
		if !ok {
			return false
		}
		tr, diags := hcl.AbsTraversalForExpr(keys.Expr)
		return !diags.HasErrors() && traversalName(tr) == ref
	}
	return false
}

// traversalString returns expr, which must be a reference, as
// "root.attr.attr".
func traversalString(t *testing.T, expr hcl.Expression) string {
	t.Helper()
	tr, diags := hcl.AbsTraversalForExpr(expr)
	if diags.HasErrors() {
		t.Fatalf("not a reference: %s", diags)
	}
	return traversalName(tr)
}

// traversalName returns tr as "root.attr.attr".
func traversalName(tr hcl.Traversal) string {
	parts := []string{tr.RootName()}
	for _, step := range tr[1:] {
		if a, ok := step.(hcl.TraverseAttr); ok {
			parts = append(parts, a.Name)
		}
	}
	return strings.Join(parts, ".")
}

// TestEncryptionEnvPassphraseLiteral parses the rendered passphrases back
// as OpenTofu's HCL parser reads them: each is the Secret's bytes.
func TestEncryptionEnvPassphraseLiteral(t *testing.T) {
	for _, s := range []string{
		escapingString,
		"line\nbreak\r\n\ttab\x00nul\x7fdel\u2028\u200b and more",
		`\u0041 is not an escape here, nor \n`,
		"$${ and %%{ are already doubled, ${ and %{ are not: ${",
		"ends with a dollar $",
		"ends with a percent %",
		"ends with a backslash \\",
	} {
		t.Run(s, func(t *testing.T) {
			src, err := EncryptionEnv(EncryptionSecrets{Passphrase: Passphrase{SecretName: "s", Value: []byte(s)}})
			if err != nil {
				t.Fatal(err)
			}
			f, diags := hclsyntax.ParseConfig(src, EnvEncryption, hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatalf("parsing: %s\n%s", diags, src)
			}
			attr := f.Body.(*hclsyntax.Body).Blocks[0].Body.Attributes["passphrase"]
			v, diags := attr.Expr.Value(nil)
			if diags.HasErrors() {
				t.Fatalf("evaluating the passphrase: %s", diags)
			}
			if got := v.AsString(); got != s {
				t.Errorf("the passphrase reads as %q, want %q", got, s)
			}
		})
	}
}

func TestEncryptionEnvErrors(t *testing.T) {
	short := []byte("fifteen bytes!!")
	cases := map[string]struct {
		secrets EncryptionSecrets
		want    error
		// wantSays are parts of the message; wantNot, parts it must not
		// hold (a passphrase's length is not for conditions).
		wantSays, wantNot []string
	}{
		"a passphrase of 15 bytes": {
			secrets:  EncryptionSecrets{Passphrase: Passphrase{SecretName: "tofu", Key: "k", Value: short}},
			want:     ErrPassphraseTooShort,
			wantSays: []string{`Secret "tofu", key "k"`},
			wantNot:  []string{"15"},
		},
		"an empty passphrase, default key": {
			secrets:  EncryptionSecrets{Passphrase: Passphrase{SecretName: "tofu"}},
			want:     ErrPassphraseTooShort,
			wantSays: []string{`Secret "tofu", key "passphrase"`},
			wantNot:  []string{"0 bytes"},
		},
		"a short fallback": {
			secrets:  EncryptionSecrets{Passphrase: testPassphrase, Fallback: &Passphrase{SecretName: "old", Value: short}},
			want:     ErrPassphraseTooShort,
			wantSays: []string{"the fallback passphrase", `Secret "old"`},
		},
		"16 bytes of which one is not UTF-8": {
			secrets:  EncryptionSecrets{Passphrase: Passphrase{SecretName: "tofu", Value: []byte("0123456789abcde\xff")}},
			want:     ErrPassphraseEncoding,
			wantSays: []string{`Secret "tofu"`, "not valid UTF-8"},
		},
		"not in normalization form C": {
			secrets:  EncryptionSecrets{Passphrase: Passphrase{SecretName: "tofu", Value: []byte("cafe\u0301 au lait, decomposed")}},
			want:     ErrPassphraseEncoding,
			wantSays: []string{"normalization form C"},
		},
		"the fallback is the passphrase's key": {
			secrets:  EncryptionSecrets{Passphrase: testPassphrase, Fallback: &Passphrase{SecretName: "tofu", Key: "passphrase", Value: testPrevious.Value}},
			want:     ErrPassphraseReused,
			wantSays: []string{`Secret "tofu", key "passphrase"`},
		},
		"the fallback is the passphrase's key by default": {
			secrets: EncryptionSecrets{Passphrase: Passphrase{SecretName: "tofu", Value: testPassphrase.Value},
				Fallback: &Passphrase{SecretName: "tofu", Key: backendsv1alpha1.DefaultPassphraseKey, Value: testPrevious.Value}},
			want: ErrPassphraseReused,
		},
		"no Secret name": {
			secrets: EncryptionSecrets{Passphrase: Passphrase{Value: testPassphrase.Value}},
			want:    ErrMissingRequired,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := EncryptionEnv(tc.secrets)
			if !errors.Is(err, tc.want) {
				t.Fatalf("EncryptionEnv = %q, %v; want %v", got, err, tc.want)
			}
			for _, want := range tc.wantSays {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			for _, not := range tc.wantNot {
				if strings.Contains(err.Error(), not) {
					t.Errorf("error %q says %q", err, not)
				}
			}
			for _, p := range []*Passphrase{&tc.secrets.Passphrase, tc.secrets.Fallback} {
				if p != nil && len(p.Value) > 0 && strings.Contains(err.Error(), string(p.Value)) {
					t.Errorf("error %q holds a passphrase", err)
				}
			}
		})
	}
}

// TestEncryptionNeeds checks that spec.encryption needs state encryption
// of the runner, on both kinds, and that runners that cannot read it are
// refused.
func TestEncryptionNeeds(t *testing.T) {
	enc := &backendsv1alpha1.StateEncryption{PassphraseSecretRef: backendsv1alpha1.SecretKeyRef{Name: "tofu"}}
	render := map[string]func(*backendsv1alpha1.Runner, *backendsv1alpha1.StateEncryption) (Files, error){
		"http": func(r *backendsv1alpha1.Runner, e *backendsv1alpha1.StateEncryption) (Files, error) {
			return HTTPFiles(backendsv1alpha1.HttpBackendSpec{Address: testAddress, BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{Runner: r, Encryption: e}})
		},
		"cos": func(r *backendsv1alpha1.Runner, e *backendsv1alpha1.StateEncryption) (Files, error) {
			return CosFiles(backendsv1alpha1.CosBackendSpec{Bucket: testBucket, BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{Runner: r, Encryption: e}}, testRegion)
		},
	}
	tofu, terraform := backendsv1alpha1.RunnerOpenTofu, backendsv1alpha1.RunnerTerraform
	cases := map[string]struct {
		runner      *backendsv1alpha1.Runner
		encryption  *backendsv1alpha1.StateEncryption
		want        []FeatureID
		wantRefused bool
	}{
		"no encryption":    {runner: &backendsv1alpha1.Runner{Flavor: terraform}},
		"no runner":        {encryption: enc, want: []FeatureID{FeatureStateEncryption}},
		"opentofu":         {runner: &backendsv1alpha1.Runner{Flavor: tofu}, encryption: enc, want: []FeatureID{FeatureStateEncryption}},
		"opentofu 1.7.0":   {runner: &backendsv1alpha1.Runner{Flavor: tofu, Version: "1.7.0"}, encryption: enc, want: []FeatureID{FeatureStateEncryption}},
		"opentofu 1.6.3":   {runner: &backendsv1alpha1.Runner{Flavor: tofu, Version: "1.6.3"}, encryption: enc, wantRefused: true},
		"terraform":        {runner: &backendsv1alpha1.Runner{Flavor: terraform}, encryption: enc, wantRefused: true},
		"terraform 1.12.0": {runner: &backendsv1alpha1.Runner{Flavor: terraform, Version: "1.12.0"}, encryption: enc, wantRefused: true},
	}
	for kind, fn := range render {
		for name, tc := range cases {
			t.Run(kind+"/"+name, func(t *testing.T) {
				f, err := fn(tc.runner, tc.encryption)
				if tc.wantRefused {
					if !errors.Is(err, ErrUnsupportedByRunner) || !strings.Contains(err.Error(), "spec.encryption (TF_ENCRYPTION), read by opentofu >= 1.7.0") {
						t.Errorf("err = %v, want ErrUnsupportedByRunner naming spec.encryption", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, f.Needs); diff != "" {
					t.Errorf("needs (-want +got):\n%s", diff)
				}
			})
		}
	}
}
