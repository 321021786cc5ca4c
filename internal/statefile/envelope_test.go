package statefile

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// plainForEnvelope is the plain state the test envelopes hold.
const plainForEnvelope = `{"version":4,"terraform_version":"1.12.6","serial":7,"lineage":"lin",` +
	`"outputs":{"name":{"value":"web","type":"string"},"token":{"value":"s3cret","type":"string","sensitive":true}}}`

// stubDecrypter opens payloads it was given the plain state of, by
// payload; it records the meta it was given. The real decrypter is tested
// in internal/stateencryption, and against statefile in its tests.
type stubDecrypter struct {
	plain map[string]string
	meta  map[string][]byte
}

func (d *stubDecrypter) Decrypt(meta map[string][]byte, payload []byte) ([]byte, error) {
	d.meta = meta
	plain, ok := d.plain[string(payload)]
	if !ok {
		return nil, errors.New("no key opens it")
	}
	return []byte(plain), nil
}

// b64 is base64 of s, as OpenTofu writes []byte fields.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// envelopeDoc is an OpenTofu envelope around payload, with extra fields
// inserted before encrypted_data.
func envelopeDoc(payload, version, extra string) string {
	return fmt.Sprintf(`{"serial":7,"lineage":"lin","meta":{"key_provider.pbkdf2.p":%q},%s"encrypted_data":%q,"encryption_version":%q}`,
		b64(`{"iterations":600000}`), extra, b64(payload), version)
}

func TestReadEnvelope(t *testing.T) {
	stub := func() *stubDecrypter {
		return &stubDecrypter{plain: map[string]string{
			"ciphertext": plainForEnvelope,
			"nested":     envelopeDoc("ciphertext", "v0", ""),
			"not json":   "{",
		}}
	}
	decrypted := Summary{Serial: 7, Lineage: "lin", TerraformVersion: "1.12.6", OutputCount: 2, Encrypted: true}
	cases := map[string]struct {
		in      string
		dec     *Decryption
		want    Summary
		is      error
		wantErr string
	}{
		"without a decryption only serial and lineage": {in: envelopeDoc("ciphertext", "v0", ""),
			want: Summary{Serial: 7, Lineage: "lin", Encrypted: true}},
		"decrypted": {in: envelopeDoc("ciphertext", "v0", ""), dec: &Decryption{Decrypter: stub()}, want: decrypted},
		"fields in any order": {dec: &Decryption{Decrypter: stub()}, want: decrypted,
			in: fmt.Sprintf(`{"encryption_version":"v0","encrypted_data":%q,"meta":{},"lineage":"lin","serial":7}`, b64("ciphertext"))},
		"keys in any case, as encoding/json matches them": {dec: &Decryption{Decrypter: stub()}, want: decrypted,
			in: fmt.Sprintf(`{"Serial":7,"LINEAGE":"lin","Meta":{},"Encrypted_Data":%q,"Encryption_Version":"v0"}`, b64("ciphertext"))},
		"a plain state with a decryption": {in: plainForEnvelope, dec: &Decryption{Decrypter: stub()},
			want: Summary{Serial: 7, Lineage: "lin", TerraformVersion: "1.12.6", OutputCount: 2}},
		"no key opens it": {in: envelopeDoc("other", "v0", ""), dec: &Decryption{Decrypter: stub()},
			is: ErrDecrypt, wantErr: "no key opens it"},
		"another encryption version": {in: envelopeDoc("ciphertext", "v1", ""), is: ErrUnsupportedVersion},
		"another encryption version with a decryption": {in: envelopeDoc("ciphertext", "v1", ""),
			dec: &Decryption{Decrypter: stub()}, is: ErrUnsupportedVersion},
		"outputs in clear text beside the payload": {is: ErrMalformed,
			in: envelopeDoc("ciphertext", "v0", `"outputs":{"x":{"value":1,"type":"number"}},`)},
		"payload over the bound": {in: envelopeDoc("ciphertext", "v0", ""),
			dec: &Decryption{Decrypter: stub(), MaxBytes: 8}, is: ErrEncryptedTooLarge},
		"payload not base64": {dec: &Decryption{Decrypter: stub()}, is: ErrMalformed,
			in: `{"serial":1,"meta":{},"encrypted_data":"!!!","encryption_version":"v0"}`},
		"meta value not base64": {dec: &Decryption{Decrypter: stub()}, is: ErrMalformed,
			in: fmt.Sprintf(`{"meta":{"k":"!!!"},"encrypted_data":%q,"encryption_version":"v0"}`, b64("ciphertext"))},
		"meta value not a string": {dec: &Decryption{Decrypter: stub()}, wantErr: "meta value: expected a string",
			in: fmt.Sprintf(`{"meta":{"k":1},"encrypted_data":%q,"encryption_version":"v0"}`, b64("ciphertext"))},
		"too many meta entries": {dec: &Decryption{Decrypter: stub()}, wantErr: "more than 16 entries",
			in: `{"meta":{` + manyMeta(17) + `},"encrypted_data":"","encryption_version":"v0"}`},
		"a meta key too long": {dec: &Decryption{Decrypter: stub()}, wantErr: "meta key is longer than 256 bytes",
			in: `{"meta":{"` + strings.Repeat("k", 257) + `":""},"encrypted_data":"","encryption_version":"v0"}`},
		"an empty encryption version is a plain state, as OpenTofu reads it": {dec: &Decryption{Decrypter: stub()},
			is: ErrUnsupportedVersion, in: envelopeDoc("ciphertext", "", "")},
		"no payload": {dec: &Decryption{Decrypter: stub()}, is: ErrMalformed,
			in: `{"serial":1,"meta":{},"encryption_version":"v0"}`},
		"encrypted twice":      {in: envelopeDoc("nested", "v0", ""), dec: &Decryption{Decrypter: stub()}, is: ErrMalformed},
		"plain state not JSON": {in: envelopeDoc("not json", "v0", ""), dec: &Decryption{Decrypter: stub()}, is: ErrMalformed},
	}
	for name, tt := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ReadSummary(strings.NewReader(tt.in), tt.dec)
			if tt.is == nil && tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ReadSummary() error: %v", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("ReadSummary() mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("ReadSummary() = %+v, want an error", got)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("ReadSummary() error %v, want one matching %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ReadSummary() error %v, want one containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), b64("ciphertext")) {
				t.Errorf("ReadSummary() error quotes the state: %v", err)
			}
		})
	}
}

// manyMeta is n meta entries with distinct keys.
func manyMeta(n int) string {
	entries := make([]string, n)
	for i := range entries {
		entries[i] = fmt.Sprintf(`"k%d":""`, i)
	}
	return strings.Join(entries, ",")
}

func TestReadOutputsEncrypted(t *testing.T) {
	in := envelopeDoc("ciphertext", "v0", "")
	if _, err := ReadOutputs(strings.NewReader(in), Options{}); !errors.Is(err, ErrEncrypted) {
		t.Errorf("ReadOutputs() without a decryption: error %v, want ErrEncrypted", err)
	}

	dec := &stubDecrypter{plain: map[string]string{"ciphertext": plainForEnvelope}}
	var acquired, released int
	st, err := ReadOutputs(strings.NewReader(in), Options{Decryption: &Decryption{
		Decrypter: dec,
		Acquire: func() (func(), error) {
			acquired++
			return func() { released++ }, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Output{
		"name":  {Value: []byte(`"web"`), Type: []byte(`"string"`)},
		"token": {Value: []byte(`"s3cret"`), Type: []byte(`"string"`), Sensitive: true},
	}
	if diff := cmp.Diff(want, st.Outputs); diff != "" {
		t.Errorf("outputs mismatch (-want +got):\n%s", diff)
	}
	if !st.Encrypted {
		t.Error("State.Encrypted = false for a decrypted state")
	}
	if diff := cmp.Diff(map[string][]byte{"key_provider.pbkdf2.p": []byte(`{"iterations":600000}`)}, dec.meta); diff != "" {
		t.Errorf("meta given to the decrypter mismatch (-want +got):\n%s", diff)
	}
	if acquired != 1 || released != 1 {
		t.Errorf("Acquire called %d times, release %d times; want 1 and 1", acquired, released)
	}

	// The slot is given back on every way out, and taken once per state.
	failing := map[string]struct {
		in       string
		maxBytes int64
	}{
		"no key opens it":          {in: envelopeDoc("other", "v0", "")},
		"a payload over the bound": {in: envelopeDoc("ciphertext", "v0", ""), maxBytes: 8},
		"trailing data":            {in: envelopeDoc("ciphertext", "v0", "") + "x"},
		"the payload twice": {in: fmt.Sprintf(`{"meta":{},"encrypted_data":%q,"encrypted_data":%q,"encryption_version":"v0"}`,
			b64("other"), b64("other"))},
	}
	for name, tc := range failing {
		acquired, released = 0, 0
		_, err := ReadOutputs(strings.NewReader(tc.in), Options{Decryption: &Decryption{
			Decrypter: dec, MaxBytes: tc.maxBytes,
			Acquire: func() (func(), error) {
				acquired++
				return func() { released++ }, nil
			},
		}})
		if err == nil {
			t.Errorf("%s: ReadOutputs() succeeded", name)
		}
		if acquired != 1 || released != 1 {
			t.Errorf("%s: Acquire called %d times, release %d times; want 1 and 1", name, acquired, released)
		}
	}

	refused := errors.New("budget exhausted")
	_, err = ReadOutputs(strings.NewReader(in), Options{Decryption: &Decryption{
		Decrypter: dec,
		Acquire:   func() (func(), error) { return nil, refused },
	}})
	if !errors.Is(err, refused) {
		t.Errorf("ReadOutputs() with a refusing Acquire: error %v, want it", err)
	}
}

// TestEnvelopeStreamsWithoutDecryption reads a 48 MiB encrypted state for
// its summary: the payload is skipped, not kept.
func TestEnvelopeStreamsWithoutDecryption(t *testing.T) {
	const size = 48 << 20
	in := io.MultiReader(
		strings.NewReader(`{"serial":3,"lineage":"l","meta":{},"encrypted_data":"`),
		&repeatReader{b: []byte("QUJDRA=="), n: size},
		strings.NewReader(`","encryption_version":"v0"}`),
	)
	var (
		got Summary
		err error
	)
	alloc := testtools.AllocatedBy(func() { got, err = ReadSummary(in, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Summary{Serial: 3, Lineage: "l", Encrypted: true}, got); diff != "" {
		t.Errorf("ReadSummary() mismatch (-want +got):\n%s", diff)
	}
	if alloc > 1<<20 {
		t.Errorf("ReadSummary() of a %d MiB encrypted state allocated %d KiB, want under 1 MiB", size>>20, alloc>>10)
	}
}
