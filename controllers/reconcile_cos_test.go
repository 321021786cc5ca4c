package controllers

import (
	"crypto/md5" // the COS lock ID is the MD5 of the .tflock object
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// The CosBackend of the COS cases, its bucket and the objects Terraform
// keeps in it.
var (
	netBackend = objectRef{backendsv1alpha1.CosBackendKind, "net"}
	netBucket  = cosBucket(harnessNamespace)
)

const (
	netStateKey = "platform/terraform.tfstate"
	netLockKey  = netStateKey + ".tflock"
)

// netLockID is the ID of the lock lockJSON describes: for COS, the MD5 of
// the .tflock object, as terraform force-unlock takes it.
var netLockID = func() string {
	sum := md5.Sum([]byte(lockJSON))
	return hex.EncodeToString(sum[:])
}()

// newNetBackend is the CosBackend "net" of netBucket, with the
// credentials of the Secret "cos-credentials", changed by opts.
func newNetBackend(opts ...func(*builders.CosBackendWrapper)) *backendsv1alpha1.CosBackend {
	b := makeCosStateBackend(netBackend.name, harnessNamespace, netBucket)
	for _, opt := range opts {
		opt(b)
	}
	return stored(b.Obj())
}

// cosBackend reads the CosBackend name.
func (e *reconcileEnv) cosBackend(name string) *backendsv1alpha1.CosBackend {
	e.t.Helper()
	return e.object(objectRef{backendsv1alpha1.CosBackendKind, name}).(*backendsv1alpha1.CosBackend)
}

// Preparations of the cases' COS server.
var (
	// noBucket leaves the server empty.
	noBucket = func(*costest.Server) {}
	// emptyBucket creates netBucket.
	emptyBucket = func(s *costest.Server) { s.CreateBucket(netBucket) }
	// lockedBucket creates netBucket holding a state and lockJSON's lock.
	lockedBucket = func(s *costest.Server) {
		s.PutState(netBucket, netStateKey, v4State(3, `"vpc_id":{"value":"vpc-1","type":"string"}`))
		s.PutState(netBucket, netLockKey, []byte(lockJSON))
	}
)

// Events of the COS cases.
var (
	netLockHeld    = recordedEvent{Object: "net", Type: corev1.EventTypeNormal, Reason: "LockHeld", Action: "Probe"}
	netUnlockedEvt = recordedEvent{Object: "net", Type: corev1.EventTypeNormal, Reason: "ForceUnlocked", Action: "ForceUnlock"}
)

// bucketReady is the conditions of a Ready CosBackend whose bucket could
// be read, with the Locked condition lock.
func bucketReady(lock metav1.Condition) []metav1.Condition {
	return []metav1.Condition{
		wantCond("Ready", metav1.ConditionTrue, "Succeeded"),
		wantCond("BucketReady", metav1.ConditionTrue, "Reachable"),
		lock,
	}
}

// allChecks runs every check in turn.
func allChecks(checks ...func(*testing.T, *reconcileEnv)) func(*testing.T, *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		for _, c := range checks {
			c(t, e)
		}
	}
}

// expectNoCosRequests checks that the COS server saw no request.
func expectNoCosRequests(t *testing.T, e *reconcileEnv) {
	t.Helper()
	if n := e.cos.Requests(); n != 0 {
		t.Errorf("the COS server got %d requests, want none: %+v", n, e.cos.RequestLog())
	}
}

// expectSigned checks that the COS server saw requests, every one signed
// with the suite's key: the reconciler reached it with the backend's
// credentials.
func expectSigned(t *testing.T, e *reconcileEnv) {
	t.Helper()
	log := e.cos.RequestLog()
	if len(log) == 0 {
		t.Fatal("the COS server got no request")
	}
	for _, r := range log {
		if r.SecretID != cosSecretID || r.Bucket != netBucket {
			t.Errorf("request %s %s to bucket %q signed by %q, want bucket %s signed by %s", r.Method, r.Path, r.Bucket, r.SecretID, netBucket, cosSecretID)
		}
	}
}

// expectRefused checks that the COS server saw requests for netBucket,
// and answered every one with status code (it looks for the bucket before
// it checks the signature, as COS does).
func expectRefused(code int) func(*testing.T, *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		log := e.cos.RequestLog()
		if len(log) == 0 {
			t.Fatal("the COS server got no request")
		}
		for _, r := range log {
			if r.Bucket != netBucket || r.Status != code {
				t.Errorf("request %s %s to bucket %q answered %d, want bucket %s answered %d", r.Method, r.Path, r.Bucket, r.Status, netBucket, code)
			}
		}
	}
}

// expectNetLock checks status.lock of backend "net".
func expectNetLock(want *backendsv1alpha1.LockInfo) func(*testing.T, *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		if diff := cmp.Diff(want, e.cosBackend(netBackend.name).Status.Lock); diff != "" {
			t.Errorf("status.lock (-want +got):\n%s", diff)
		}
	}
}

// expectNetLastForceUnlock checks status.lastForceUnlock.
func expectNetLastForceUnlock(want *backendsv1alpha1.ForceUnlockStatus) func(*testing.T, *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		if diff := cmp.Diff(want, e.cosBackend(netBackend.name).Status.LastForceUnlock); diff != "" {
			t.Errorf("status.lastForceUnlock (-want +got):\n%s", diff)
		}
	}
}

// expectLockObject checks whether the .tflock object is on the server.
func expectLockObject(want bool) func(*testing.T, *reconcileEnv) {
	return func(t *testing.T, e *reconcileEnv) {
		t.Helper()
		if _, _, held := e.cos.Object(netBucket, netLockKey); held != want {
			t.Errorf("%s on the server = %t, want %t", netLockKey, held, want)
		}
	}
}

// expectCosRendered checks the ConfigMap and the Secret of backend "net",
// and status.rendered and status.region.
func expectCosRendered(t *testing.T, e *reconcileEnv) {
	t.Helper()
	backend := e.cosBackend(netBackend.name)
	cm, secret := e.configMap("net-backend"), e.secret("net-backend-credentials")
	if cm == nil || secret == nil {
		t.Fatalf("rendered ConfigMap = %v, Secret = %v; want both", cm, secret)
	}
	for _, part := range []string{`backend "cos"`, netBucket, `"ap-guangzhou"`} {
		if !strings.Contains(cm.Data[render.BackendTFKey], part) {
			t.Errorf("backend.tf = %q, want it to contain %s", cm.Data[render.BackendTFKey], part)
		}
	}
	want := map[string][]byte{"TENCENTCLOUD_SECRET_ID": []byte(cosSecretID), "TENCENTCLOUD_SECRET_KEY": []byte(cosSecretKey)}
	if diff := cmp.Diff(want, secret.Data); diff != "" {
		t.Errorf("Secret data (-want +got):\n%s", diff)
	}
	for _, obj := range []client.Object{cm, secret} {
		if ref := metav1.GetControllerOf(obj); ref == nil || ref.Kind != backendsv1alpha1.CosBackendKind || ref.UID != backend.UID {
			t.Errorf("controller of %s = %v, want the CosBackend", obj.GetName(), ref)
		}
	}
	wantRendered := &backendsv1alpha1.RenderedObjects{ConfigMapName: "net-backend", SecretName: "net-backend-credentials", CompatibleRunners: everyRunner}
	if diff := cmp.Diff(wantRendered, backend.Status.Rendered); diff != "" {
		t.Errorf("status.rendered (-want +got):\n%s", diff)
	}
	if backend.Status.Region != "ap-guangzhou" {
		t.Errorf("status.region = %q, want ap-guangzhou", backend.Status.Region)
	}
}

// TestReconcileCosBackend checks a CosBackend against a COS server that
// checks request signatures: what it renders, how the bucket check reads
// a missing bucket, refused keys, disabled probing and role-only
// credentials, and the lock of the .tflock object, released only for the
// ID spec.forceUnlock names.
func TestReconcileCosBackend(t *testing.T) {
	within := requeueWithin(DefaultProbeInterval, DefaultProbeInterval*11/10)
	holder := &backendsv1alpha1.LockInfo{
		ID: netLockID, Operation: "OperationTypeApply", Who: "bob@ci", Version: "1.5.7", Path: netLockKey,
		Created: new(metav1.NewTime(time.Date(2026, time.January, 2, 3, 4, 5, 0, time.UTC))),
	}
	forceUnlock := func(id string) func(*builders.CosBackendWrapper) {
		return func(b *builders.CosBackendWrapper) { b.ForceUnlock(id) }
	}
	bucketFailed := func(reason string) []metav1.Condition {
		return []metav1.Condition{
			wantCond("Ready", metav1.ConditionFalse, reason),
			wantCond("BucketReady", metav1.ConditionFalse, reason),
			wantCond("Locked", metav1.ConditionUnknown, reason),
		}
	}
	bucketFailedEvent := func(reason string) recordedEvent {
		return recordedEvent{Object: "net", Type: corev1.EventTypeWarning, Reason: reason, Action: "Reconcile"}
	}
	probeOff := func(reason string) []metav1.Condition {
		return []metav1.Condition{
			wantCond("Ready", metav1.ConditionTrue, "Succeeded"),
			wantCond("BucketReady", metav1.ConditionUnknown, reason),
			unchecked,
		}
	}

	cases := map[string]reconcileCase{
		"renders and is Ready once the bucket is checked": {
			objects: []client.Object{newNetBackend(), cosCredentials(harnessNamespace)},
			cos:     emptyBucket,
			target:  netBackend,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantRequeue:    within,
				wantConditions: bucketReady(wantCond("Locked", metav1.ConditionFalse, "NotLocked")),
				check: allChecks(expectCosRendered, expectSigned, expectNetLock(nil), func(t *testing.T, e *reconcileEnv) {
					t.Helper()
					if diff := cmp.Diff(&backendsv1alpha1.StateSummary{Present: false}, e.cosBackend(netBackend.name).Status.State); diff != "" {
						t.Errorf("status.state (-want +got):\n%s", diff)
					}
				}),
			}},
		},
		"a bucket that does not exist": {
			objects: []client.Object{newNetBackend(), cosCredentials(harnessNamespace)},
			cos:     noBucket,
			target:  netBackend,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: bucketFailed("BucketNotFound"),
				wantEvents:     []recordedEvent{bucketFailedEvent("BucketNotFound")},
				check:          expectRefused(http.StatusNotFound),
			}},
		},
		"credentials COS refuses": {
			objects: []client.Object{
				newNetBackend(func(b *builders.CosBackendWrapper) { b.Credentials("wrong") }),
				builders.MakeSecret("wrong", harnessNamespace).Data(map[string]string{"secretId": cosSecretID, "secretKey": "not-the-key"}).Obj(),
			},
			cos:    emptyBucket,
			target: netBackend,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: bucketFailed("AccessDenied"),
				wantEvents:     []recordedEvent{bucketFailedEvent("AccessDenied")},
				check:          expectRefused(http.StatusForbidden),
			}},
		},
		"probing disabled": {
			objects: []client.Object{
				newNetBackend(func(b *builders.CosBackendWrapper) { b.ProbeInterval(0) }),
				cosCredentials(harnessNamespace),
			},
			cos:    lockedBucket,
			target: netBackend,
			steps: []reconcileStep{{
				wantRequeue:    noRequeue,
				wantConditions: probeOff("ProbeDisabled"),
				check:          allChecks(expectCosRendered, expectNoCosRequests),
			}},
		},
		"credentials that are only a role to assume": {
			objects: []client.Object{newNetBackend(func(b *builders.CosBackendWrapper) {
				b.Credentials("").AssumeRole("qcs::cam::uin/100000000001:roleName/tfstate", "runner")
			})},
			cos:    lockedBucket,
			target: netBackend,
			steps: []reconcileStep{{
				wantConditions: probeOff("AssumeRoleNotSupported"),
				check:          expectNoCosRequests,
			}},
		},
		"a held lock": {
			objects: []client.Object{newNetBackend(), cosCredentials(harnessNamespace)},
			cos:     lockedBucket,
			target:  netBackend,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: bucketReady(wantCond("Locked", metav1.ConditionTrue, "LockHeld")),
				wantEvents:     []recordedEvent{netLockHeld},
				check: allChecks(expectNetLock(holder), expectLockObject(true), func(t *testing.T, e *reconcileEnv) {
					t.Helper()
					if s := e.cosBackend(netBackend.name).Status.State; s == nil || !s.Present || s.Serial != 3 {
						t.Errorf("status.state = %+v, want the state of serial 3", s)
					}
				}),
			}},
		},
		"forceUnlock naming the holder's ID releases its lock": {
			objects: []client.Object{newNetBackend(forceUnlock(netLockID)), cosCredentials(harnessNamespace)},
			cos:     lockedBucket,
			target:  netBackend,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: bucketReady(wantCond("Locked", metav1.ConditionFalse, "ForceUnlocked")),
				wantEvents:     []recordedEvent{netUnlockedEvt},
				check: allChecks(expectNetLock(nil), expectLockObject(false), expectNetLastForceUnlock(
					&backendsv1alpha1.ForceUnlockStatus{LockID: netLockID, Time: metav1.NewTime(harnessEpoch)})),
			}},
		},
		"forceUnlock naming another ID releases nothing": {
			// The JSON's own ID is not the lock ID of COS.
			objects: []client.Object{newNetBackend(forceUnlock("0f6b6d2c-4a8e-4a51-9d1e-7c2b1f0e9a11")), cosCredentials(harnessNamespace)},
			cos:     lockedBucket,
			target:  netBackend,
			steps: []reconcileStep{{
				do:             reconcileUntilProbed,
				wantConditions: bucketReady(wantCond("Locked", metav1.ConditionTrue, "ForceUnlockSkipped")),
				wantEvents:     []recordedEvent{netLockHeld},
				check:          allChecks(expectNetLock(holder), expectLockObject(true), expectNetLastForceUnlock(nil)),
			}},
		},
	}
	runReconcileCases(t, cases)
}
