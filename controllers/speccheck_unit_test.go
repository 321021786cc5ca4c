package controllers

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

func TestCheckHTTPSpec(t *testing.T) {
	const secret = "hunter2-secret"
	valid := backendsv1alpha1.HttpBackendSpec{
		Address:     "https://state.example.com/state/app?env=prod&ID=1",
		LockAddress: "http://10.0.0.1:8080/lock", UnlockAddress: "https://[::1]:8443/unlock",
		LockMethod: "POST", UnlockMethod: "DELETE", BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{ConfigMapName: "app-backend"},
	}
	cases := map[string]struct {
		edit    func(*backendsv1alpha1.HttpBackendSpec)
		wantMsg string
	}{
		"valid": {},
		"user info": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.Address = "https://runner:" + secret + "@state.example.com/x"
		}, wantMsg: "spec.address must not contain user information"},
		"a user name only": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.UnlockAddress = "https://" + secret + "@state.example.com/x"
		}, wantMsg: "spec.unlockAddress must not contain user information"},
		"a query token":        {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.LockAddress = "https://s/x?a=1&Token=" + secret }, wantMsg: "spec.lockAddress must not carry credentials in its query string (parameter Token)"},
		"the metadata service": {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.Address = "http://169.254.169.254/latest" }, wantMsg: "spec.address must not point at a link-local address"},
		"mapped link-local":    {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.Address = "http://[::ffff:169.254.169.254]/" }, wantMsg: "must not point at a link-local address"},
		"a metadata host name": {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.Address = "http://Metadata.Google.Internal./x" }, wantMsg: "must not point at a link-local address"},
		"0.0.0.0":              {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.Address = "http://0.0.0.0:8080/x" }, wantMsg: "spec.address must not be an unspecified address (0.0.0.0 or ::): a connection to it reaches the local host"},
		"mapped 0.0.0.0":       {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.LockAddress = "http://[::ffff:0.0.0.0]/" }, wantMsg: "spec.lockAddress must not be an unspecified address"},
		"::":                   {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.UnlockAddress = "http://[::]/" }, wantMsg: "spec.unlockAddress must not be an unspecified address"},
		"6to4 metadata":        {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.Address = "http://[2002:a9fe:a9fe::1]/" }, wantMsg: "spec.address must not point at a link-local address"},
		"a GET lock":           {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.LockMethod = "GET" }, wantMsg: "spec.lockMethod must be one of LOCK, UNLOCK, POST, PUT, DELETE, PATCH"},
		"a POST lock at the state's address, POST updates": {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.LockAddress = s.Address },
			wantMsg: "The value of spec.lockAddress equals spec.address, and spec.lockMethod equals spec.updateMethod (POST): the server would take every lock request for a write of the state"},
		"a PUT unlock at the state's address, PUT updates": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.UnlockAddress, s.UnlockMethod, s.UpdateMethod = s.Address, "PUT", "PUT"
		}, wantMsg: "The value of spec.unlockAddress equals spec.address, and spec.unlockMethod equals spec.updateMethod (PUT)"},
		"the default lock method at the state's address, LOCK updates": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.LockAddress, s.LockMethod, s.UpdateMethod = s.Address, "", "LOCK"
		}, wantMsg: "spec.lockMethod equals spec.updateMethod (LOCK)"},
		"a POST lock at the state's address, PUT updates": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.LockAddress, s.UpdateMethod = s.Address, "PUT"
		}},
		"the default methods at the state's address": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.LockAddress, s.UnlockAddress, s.LockMethod, s.UnlockMethod = s.Address, s.Address, "", ""
		}},
		"kube-root-ca.crt": {edit: func(s *backendsv1alpha1.HttpBackendSpec) { s.ConfigMapName = "kube-root-ca.crt" }, wantMsg: "spec.configMapName must not be a name that Kubernetes or a cluster add-on publishes"},
		"overrides the probe ignores": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.Overrides = []backendsv1alpha1.Override{override("update_method", `"PUT"`), override("future", `"`+secret+`"`)}
		}},
		"an address override": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.Overrides = []backendsv1alpha1.Override{override("update_method", `"PUT"`), override("address", `"https://runner:`+secret+`@elsewhere.example.com/x"`)}
		}, wantMsg: "spec.overrides[1] sets address, which the probe and RemoteState read from spec.address: set spec.address instead"},
		"a username override": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.Overrides = []backendsv1alpha1.Override{override("username", `"`+secret+`"`)}
		}, wantMsg: "spec.overrides[0] sets username, which the probe and RemoteState read from spec.username"},
		"a skip_cert_verification override": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.Overrides = []backendsv1alpha1.Override{override("skip_cert_verification", `true`)}
		}, wantMsg: "set spec.skipCertVerification instead"},
		"a lock_address override": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.Overrides = []backendsv1alpha1.Override{override("lock_address", `"http://169.254.169.254/"`)}
		}, wantMsg: "set spec.lockAddress instead"},
		"a retry override": {edit: func(s *backendsv1alpha1.HttpBackendSpec) {
			s.Overrides = []backendsv1alpha1.Override{override("retry_wait_max", `1`)}
		}, wantMsg: "set spec.retryWaitMax instead"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := valid
			if tc.edit != nil {
				tc.edit(&spec)
			}
			expectStall(t, checkHTTPSpec(spec), tc.wantMsg, secret)
		})
	}
}

func TestCheckCosAndRemoteStateSpecs(t *testing.T) {
	cases := map[string]struct {
		err     error
		wantMsg string
	}{
		"a valid CosBackend": {err: checkCosSpec(backendsv1alpha1.CosBackendSpec{Prefix: "platform/a..b", Key: "k", Endpoint: "http://cos-internal.ap-guangzhou.tencentcos.cn", AllowInsecureEndpoint: true})},
		"a prefix escape":    {err: checkCosSpec(backendsv1alpha1.CosBackendSpec{Prefix: "platform/../other"}), wantMsg: "spec.prefix must not contain '..' path segments"},
		"a key escape":       {err: checkCosSpec(backendsv1alpha1.CosBackendSpec{Key: "../other/terraform.tfstate"}), wantMsg: "spec.key must not contain '..'"},
		"an http endpoint":   {err: checkCosSpec(backendsv1alpha1.CosBackendSpec{Endpoint: "http://cos-internal.ap-guangzhou.tencentcos.cn"}), wantMsg: "spec.endpoint uses http://"},
		"a mesh CA bundle":   {err: checkCosSpec(backendsv1alpha1.CosBackendSpec{BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{ConfigMapName: "istio-ca-root-cert"}}), wantMsg: "spec.configMapName must not be"},
		"overrides the probe ignores": {err: checkCosSpec(backendsv1alpha1.CosBackendSpec{Overrides: []backendsv1alpha1.Override{
			override("domain", `"internal.tencentcloudapi.com"`), override("acl", `"private"`), override("encrypt", `true`),
			override("assume_role", `{"policy": "{}"}`), override("assume_role.session_duration", `900`),
		}})},
		"a bucket override":      {err: checkCosSpec(cosOverride("bucket", `"other-1250000000"`)), wantMsg: "spec.overrides[0] sets bucket, which the probe and RemoteState read from spec.bucket: set spec.bucket instead"},
		"a region override":      {err: checkCosSpec(cosOverride("region", `"ap-shanghai"`)), wantMsg: "set spec.region instead"},
		"a prefix override":      {err: checkCosSpec(cosOverride("prefix", `"other-team"`)), wantMsg: "set spec.prefix instead"},
		"a key override":         {err: checkCosSpec(cosOverride("key", `"x.tfstate"`)), wantMsg: "set spec.key instead"},
		"an accelerate override": {err: checkCosSpec(cosOverride("accelerate", `true`)), wantMsg: "set spec.accelerate instead"},
		"an endpoint override":   {err: checkCosSpec(cosOverride("endpoint", `"http://cos-internal.ap-guangzhou.tencentcos.cn"`)), wantMsg: "set spec.endpoint instead"},
		"a valid RemoteState": {err: checkRemoteStateSpec(backendsv1alpha1.RemoteStateSpec{Workspace: "staging",
			Target: backendsv1alpha1.RemoteStateTarget{ConfigMapName: "net", SecretName: "net"}})},
		"a workspace escape": {err: checkRemoteStateSpec(backendsv1alpha1.RemoteStateSpec{Workspace: ".."}), wantMsg: "spec.workspace must not be '.' or '..'"},
		"a system ConfigMap": {err: checkRemoteStateSpec(backendsv1alpha1.RemoteStateSpec{Target: backendsv1alpha1.RemoteStateTarget{ConfigMapName: "openshift-service-ca.crt"}}), wantMsg: "spec.target.configMapName must not be"},
		"a Helm release":     {err: checkRemoteStateSpec(backendsv1alpha1.RemoteStateSpec{Target: backendsv1alpha1.RemoteStateTarget{SecretName: "sh.helm.release.v1.app.v3"}}), wantMsg: "spec.target.secretName must not be a Helm release"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { expectStall(t, tc.err, tc.wantMsg, "") })
	}
}

// override is an override of path with the JSON value.
func override(path, value string) backendsv1alpha1.Override {
	return backendsv1alpha1.Override{Path: path, Value: apiextensionsv1.JSON{Raw: []byte(value)}}
}

// cosOverride is a CosBackend spec whose only override sets path.
func cosOverride(path, value string) backendsv1alpha1.CosBackendSpec {
	return backendsv1alpha1.CosBackendSpec{Bucket: "tfstate-1250000000", Overrides: []backendsv1alpha1.Override{override(path, value)}}
}

// expectStall checks that err is nil when wantMsg is empty, and otherwise
// an InvalidSpec stall containing wantMsg and not secret.
func expectStall(t *testing.T, err error, wantMsg, secret string) {
	t.Helper()
	if wantMsg == "" {
		if err != nil {
			t.Fatalf("error = %v, want none", err)
		}
		return
	}
	se, ok := conditions.AsStall(err)
	if !ok || se.Reason != backendsv1alpha1.InvalidSpecReason || !strings.Contains(se.Message, wantMsg) {
		t.Fatalf("error = %v, want an InvalidSpec stall containing %q", err, wantMsg)
	}
	if secret != "" && strings.Contains(se.Message, secret) {
		t.Errorf("message %q quotes the secret", se.Message)
	}
}

// TestReconcileRefusesLegacySpec reconciles, with a fake client (which
// runs no admission rule), backends stored before the rules existed: an
// address holding a password, and overrides of settings the probe reads
// from typed fields. Each stalls with InvalidSpec, quoting no value, and
// nothing is rendered.
func TestReconcileRefusesLegacySpec(t *testing.T) {
	const secret = "s3cret"
	cases := map[string]struct {
		obj     client.Object
		wantMsg string
	}{
		"a password in the address": {
			obj:     builders.MakeHttpBackend("legacy", "ns", "https://runner:"+secret+"@state.example.com/state/x").Generation(1).ObservedGeneration(-1).Obj(),
			wantMsg: "spec.address must not contain user information",
		},
		"an address override": {
			obj: builders.MakeHttpBackend("legacy", "ns", "https://state.example.com/state/x").Generation(1).ObservedGeneration(-1).
				Overrides(override("address", `"https://`+secret+`.example.com/x"`)).Obj(),
			wantMsg: "set spec.address instead",
		},
		"a POST lock at the state's address": {
			obj: func() client.Object {
				b := builders.MakeHttpBackend("legacy", "ns", "https://state.example.com/state/x").Generation(1).ObservedGeneration(-1).
					LockAddresses("https://state.example.com/state/x", "https://state.example.com/state/x").Obj()
				b.Spec.LockMethod = "POST"
				return b
			}(),
			wantMsg: "spec.lockMethod equals spec.updateMethod (POST)",
		},
		"a bucket override": {
			obj: builders.MakeCosBackend("legacy", "ns", "tfstate-1250000000").Region("ap-guangzhou").Generation(1).ObservedGeneration(-1).
				Overrides(override("bucket", `"`+secret+`-1250000000"`)).Obj(),
			wantMsg: "set spec.bucket instead",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			builder := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(tc.obj).
				WithStatusSubresource(&backendsv1alpha1.HttpBackend{}, &backendsv1alpha1.CosBackend{})
			for _, ix := range fieldIndexes() {
				builder = builder.WithIndex(ix.obj, ix.field, ix.extract)
			}
			c := builder.Build()
			var r reconcile.Reconciler
			switch tc.obj.(type) {
			case *backendsv1alpha1.HttpBackend:
				r = newBackendReconciler(httpKind{}, c, c, events.NewFakeRecorder(10))
			default:
				r = newBackendReconciler(cosKind{}, c, c, events.NewFakeRecorder(10))
			}
			key := types.NamespacedName{Namespace: "ns", Name: "legacy"}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatalf("Reconcile() = %v", err)
			}
			got := tc.obj.DeepCopyObject().(client.Object)
			if err := c.Get(context.Background(), key, got); err != nil {
				t.Fatal(err)
			}
			conds := *got.(interface{ StatusConditions() *[]metav1.Condition }).StatusConditions()
			stalled := apimeta.FindStatusCondition(conds, backendsv1alpha1.StalledCondition)
			if stalled == nil || stalled.Reason != backendsv1alpha1.InvalidSpecReason || !strings.Contains(stalled.Message, tc.wantMsg) || strings.Contains(stalled.Message, secret) {
				t.Fatalf("Stalled = %+v, want InvalidSpec saying %q without the value", stalled, tc.wantMsg)
			}
			err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "legacy-backend"}, &corev1.ConfigMap{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("the ConfigMap was rendered (Get = %v): runners would have used what status does not describe", err)
			}
		})
	}
}
