package builders

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// TestBuilders checks what each wrapper builds: MakeX sets only the fields
// it takes, and each setter the fields its doc comment names.
func TestBuilders(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	meta := metav1.ObjectMeta{Name: "app", Namespace: "team-a"}
	const address = "https://state.example.com/state/app"
	override := backendsv1alpha1.Override{Path: "headers", Value: apiextensionsv1.JSON{Raw: []byte(`{"X-Stack":"app"}`)}}
	fallback := backendsv1alpha1.EncryptionFallback{Unencrypted: true}
	policy := backendsv1alpha1.LockPolicy{ReleaseWhenHolderGone: true}
	holder := backendsv1alpha1.LockInfo{ID: "L", Who: "runner@ci", Created: new(metav1.NewTime(at))}
	cond := metav1.Condition{Type: backendsv1alpha1.LockedCondition, Status: metav1.ConditionTrue, Reason: backendsv1alpha1.LockAcquiredReason}

	cases := map[string]struct {
		got, want client.Object
	}{
		"an HttpBackend with only its address": {
			got:  MakeHttpBackend("app", "team-a", address).Obj(),
			want: &backendsv1alpha1.HttpBackend{ObjectMeta: meta, Spec: backendsv1alpha1.HttpBackendSpec{Address: address}},
		},
		"an HttpBackend with every setter": {
			got: MakeHttpBackend("app", "team-a", address).Generation(2).UID("uid-app").Finalizers("f").Deleted(at).
				Locks().BasicAuth("runner", "state-password", "token").ClientCertificate("client-cert").CAFromSecret("ca", "ca.pem").
				Retries(1, 2, 3).LockCheck().ProbeInterval(time.Minute).ForceUnlock("L").LockPolicy(policy).ConfigMapName("files").
				Runner(backendsv1alpha1.RunnerOpenTofu, "1.8").Encryption("passphrase").EncryptionFallback(fallback).
				Overrides(override).ObservedGeneration(-1).Obj(),
			want: &backendsv1alpha1.HttpBackend{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a", Generation: 2, UID: "uid-app",
					Finalizers: []string{"f"}, DeletionTimestamp: new(metav1.NewTime(at))},
				Spec: backendsv1alpha1.HttpBackendSpec{
					Address: address, LockAddress: address, UnlockAddress: address,
					Username: "runner", PasswordSecretRef: &backendsv1alpha1.SecretKeyRef{Name: "state-password", Key: "token"},
					RetryMax: new(int32(1)), RetryWaitMin: new(int32(2)), RetryWaitMax: new(int32(3)),
					TLS: &backendsv1alpha1.HttpBackendTLS{
						ClientCertificateSecretRef: &backendsv1alpha1.LocalSecretRef{Name: "client-cert"},
						CACertificate:              &backendsv1alpha1.CACertificateSource{SecretRef: &backendsv1alpha1.LocalSecretRef{Name: "ca"}, Key: "ca.pem"},
					},
					Probe: &backendsv1alpha1.HttpProbeSpec{
						ProbeSpec: backendsv1alpha1.ProbeSpec{Interval: &metav1.Duration{Duration: time.Minute}}, LockCheck: true,
					},
					ForceUnlock: &backendsv1alpha1.ForceUnlockSpec{LockID: "L"},
					LockPolicy:  &policy,
					BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{
						Runner: &backendsv1alpha1.Runner{Flavor: backendsv1alpha1.RunnerOpenTofu, Version: "1.8"},
						Encryption: &backendsv1alpha1.StateEncryption{
							PassphraseSecretRef: backendsv1alpha1.SecretKeyRef{Name: "passphrase"}, Fallback: &fallback,
						},
						ConfigMapName: "files",
					},
					Overrides: []backendsv1alpha1.Override{override},
				},
				Status: backendsv1alpha1.HttpBackendStatus{BackendStatus: backendsv1alpha1.BackendStatus{ObservedGeneration: -1}},
			},
		},
		"an HttpBackend with its own lock addresses, a CA ConfigMap and only retryMax": {
			got: MakeHttpBackend("app", "team-a", address).LockAddresses("https://lock", "https://unlock").CAFromConfigMap("ca").
				RetryMax(0).Obj(),
			want: &backendsv1alpha1.HttpBackend{ObjectMeta: meta, Spec: backendsv1alpha1.HttpBackendSpec{
				Address: address, LockAddress: "https://lock", UnlockAddress: "https://unlock", RetryMax: new(int32(0)),
				TLS: &backendsv1alpha1.HttpBackendTLS{
					CACertificate: &backendsv1alpha1.CACertificateSource{ConfigMapRef: &backendsv1alpha1.LocalConfigMapRef{Name: "ca"}},
				},
			}},
		},
		"a CosBackend with only its bucket": {
			got:  MakeCosBackend("app", "team-a", "tfstate-1250000000").Obj(),
			want: &backendsv1alpha1.CosBackend{ObjectMeta: meta, Spec: backendsv1alpha1.CosBackendSpec{Bucket: "tfstate-1250000000"}},
		},
		"a CosBackend with every setter": {
			got: MakeCosBackend("app", "team-a", "tfstate-1250000000").Generation(1).Region("ap-guangzhou").Prefix("platform").
				Encrypt(true).Credentials("cos-credentials").AssumeRole("qcs::cam::uin/1:roleName/tf", "runner").
				ProbeInterval(0).ForceUnlock("L").LockPolicy(policy).Encryption("passphrase").EncryptionFallback(fallback).
				Overrides(override).ObservedGeneration(-1).Obj(),
			want: &backendsv1alpha1.CosBackend{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a", Generation: 1},
				Spec: backendsv1alpha1.CosBackendSpec{
					Bucket: "tfstate-1250000000", Region: "ap-guangzhou", Prefix: "platform", Encrypt: new(true),
					CredentialsSecretRef: &backendsv1alpha1.LocalSecretRef{Name: "cos-credentials"},
					AssumeRole:           &backendsv1alpha1.AssumeRole{RoleArn: "qcs::cam::uin/1:roleName/tf", SessionName: "runner"},
					Probe:                &backendsv1alpha1.ProbeSpec{Interval: &metav1.Duration{}},
					ForceUnlock:          &backendsv1alpha1.ForceUnlockSpec{LockID: "L"},
					LockPolicy:           &policy,
					BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{Encryption: &backendsv1alpha1.StateEncryption{
						PassphraseSecretRef: backendsv1alpha1.SecretKeyRef{Name: "passphrase"}, Fallback: &fallback,
					}},
					Overrides: []backendsv1alpha1.Override{override},
				},
				Status: backendsv1alpha1.CosBackendStatus{BackendStatus: backendsv1alpha1.BackendStatus{ObservedGeneration: -1}},
			},
		},
		"a CosBackend whose credentials are removed": {
			got:  MakeCosBackend("app", "team-a", "tfstate-1250000000").Credentials("cos-credentials").Credentials("").Obj(),
			want: &backendsv1alpha1.CosBackend{ObjectMeta: meta, Spec: backendsv1alpha1.CosBackendSpec{Bucket: "tfstate-1250000000"}},
		},
		"a RemoteState with only its backend": {
			got: MakeRemoteState("app", "team-a", backendsv1alpha1.CosBackendKind, "network").Obj(),
			want: &backendsv1alpha1.RemoteState{ObjectMeta: meta, Spec: backendsv1alpha1.RemoteStateSpec{
				BackendRef: backendsv1alpha1.RemoteBackendReference{BackendReference: backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.CosBackendKind, Name: "network"}},
			}},
		},
		"a RemoteState with every setter": {
			got: MakeRemoteState("app", "team-a", backendsv1alpha1.HttpBackendKind, "network").Created(at).Workspace("staging").FromNamespace("network-team").
				Outputs(backendsv1alpha1.OutputSelector{Name: "vpc_id", Key: "VPC"}).
				Defaults(map[string]apiextensionsv1.JSON{"vpc_id": {Raw: []byte(`"vpc-0"`)}}).
				Target("", "net-secrets").ProbeInterval(10 * time.Second).Obj(),
			want: &backendsv1alpha1.RemoteState{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a", CreationTimestamp: metav1.NewTime(at)}, Spec: backendsv1alpha1.RemoteStateSpec{
				BackendRef: backendsv1alpha1.RemoteBackendReference{BackendReference: backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "network"}, Namespace: "network-team"},
				Workspace:  "staging",
				Outputs:    []backendsv1alpha1.OutputSelector{{Name: "vpc_id", Key: "VPC"}},
				Defaults:   map[string]apiextensionsv1.JSON{"vpc_id": {Raw: []byte(`"vpc-0"`)}},
				Target:     backendsv1alpha1.RemoteStateTarget{SecretName: "net-secrets"},
				Probe:      &backendsv1alpha1.ProbeSpec{Interval: &metav1.Duration{Duration: 10 * time.Second}},
			}},
		},
		"a StateLock with only its backend": {
			got: MakeStateLock("app", "team-a", backendsv1alpha1.HttpBackendKind, "web").Obj(),
			want: &backendsv1alpha1.StateLock{ObjectMeta: meta, Spec: backendsv1alpha1.StateLockSpec{
				BackendRef: backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "web"},
			}},
		},
		"a StateLock with every setter": {
			got: MakeStateLock("app", "team-a", backendsv1alpha1.HttpBackendKind, "web").Generation(3).UID("uid-app").Created(at).
				Annotation(backendsv1alpha1.ReacquireAnnotation, "1").Finalizers(backendsv1alpha1.StateLockFinalizer).Deleted(at).
				Workspace("default").Reason("release freeze").Until(at.Add(time.Hour)).
				Holds(holder).WaitsFor(&backendsv1alpha1.LockInfo{ID: "H"}).ReacquireRequest("1").Condition(cond).Obj(),
			want: &backendsv1alpha1.StateLock{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a", Generation: 3, UID: "uid-app",
					CreationTimestamp: metav1.NewTime(at), Annotations: map[string]string{backendsv1alpha1.ReacquireAnnotation: "1"},
					Finalizers: []string{backendsv1alpha1.StateLockFinalizer}, DeletionTimestamp: new(metav1.NewTime(at))},
				Spec: backendsv1alpha1.StateLockSpec{
					BackendRef: backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "web"},
					Workspace:  "default", Reason: "release freeze", Until: new(metav1.NewTime(at.Add(time.Hour))),
				},
				Status: backendsv1alpha1.StateLockStatus{
					LockID: "L", HeldSince: new(metav1.NewTime(at)), LockInfo: &holder,
					Holder: &backendsv1alpha1.LockInfo{ID: "H"}, ReacquireRequest: "1",
					Conditions: []metav1.Condition{cond},
				},
			},
		},
		"a StateHistory with only its source and destination": {
			got: MakeStateHistory("app", "team-a", backendsv1alpha1.HttpBackendKind, "web", "vault").Obj(),
			want: &backendsv1alpha1.StateHistory{ObjectMeta: meta, Spec: backendsv1alpha1.StateHistorySpec{
				BackendRef:  backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "web"},
				Destination: backendsv1alpha1.HistoryDestination{CosBackendRef: backendsv1alpha1.LocalObjectReference{Name: "vault"}},
			}},
		},
		"a StateHistory with every setter": {
			got: MakeStateHistory("app", "team-a", backendsv1alpha1.CosBackendKind, "web", "vault").Created(at).Workspace("staging").
				Prefix("history/web").Interval(10 * time.Second).RetainCount(3).RetainMaxAge(time.Hour).Obj(),
			want: &backendsv1alpha1.StateHistory{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a", CreationTimestamp: metav1.NewTime(at)},
				Spec: backendsv1alpha1.StateHistorySpec{
					BackendRef: backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.CosBackendKind, Name: "web"},
					Workspace:  "staging",
					Destination: backendsv1alpha1.HistoryDestination{
						CosBackendRef: backendsv1alpha1.LocalObjectReference{Name: "vault"}, Prefix: "history/web",
					},
					Interval: &metav1.Duration{Duration: 10 * time.Second},
					Retain:   &backendsv1alpha1.HistoryRetention{Count: new(int32(3)), MaxAge: &metav1.Duration{Duration: time.Hour}},
				},
			},
		},
		"a StateRestore with only its history and serial": {
			got: MakeStateRestore("app", "team-a", "web-history", 7).Obj(),
			want: &backendsv1alpha1.StateRestore{ObjectMeta: meta, Spec: backendsv1alpha1.StateRestoreSpec{
				HistoryRef: backendsv1alpha1.LocalObjectReference{Name: "web-history"}, Serial: 7,
			}},
		},
		"a StateRestore with every setter": {
			got: MakeStateRestore("app", "team-a", "web-history", 7).Lineage("lineage-1").AllowLineageChange().Obj(),
			want: &backendsv1alpha1.StateRestore{ObjectMeta: meta, Spec: backendsv1alpha1.StateRestoreSpec{
				HistoryRef: backendsv1alpha1.LocalObjectReference{Name: "web-history"}, Serial: 7, Lineage: "lineage-1", AllowLineageChange: true,
			}},
		},
		"a Secret with data given as strings, added to": {
			got:  MakeSecret("app", "team-a").Data(map[string]string{"password": "p"}).Data(map[string]string{"user": "u"}).Obj(),
			want: &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"password": []byte("p"), "user": []byte("u")}},
		},
		"a TLS Secret": {
			got: MakeSecret("app", "team-a").TLS([]byte("cert"), []byte("key")).Obj(),
			want: &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: []byte("cert"), corev1.TLSPrivateKeyKey: []byte("key")}},
		},
		"a ConfigMap with data, added to": {
			got:  MakeConfigMap("app", "team-a").Data(map[string]string{"ca.crt": "pem"}).Data(map[string]string{"other": "x"}).Obj(),
			want: &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"ca.crt": "pem", "other": "x"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("built object mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestObjIsTheWrappersOwn checks that Obj returns the object the wrapper
// holds, not a copy: a setter called after Obj changes what Obj returned.
func TestObjIsTheWrappersOwn(t *testing.T) {
	w := MakeHttpBackend("app", "team-a", "https://state.example.com/state/app")
	obj := w.Obj()
	w.Locks()
	if obj.Spec.LockAddress != obj.Spec.Address {
		t.Errorf("spec.lockAddress of the object Obj returned = %q after Locks, want %q", obj.Spec.LockAddress, obj.Spec.Address)
	}
}
