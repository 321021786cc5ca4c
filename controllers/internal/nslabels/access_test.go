package nslabels

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestMayWatch(t *testing.T) {
	cases := map[string]struct {
		allowed   map[string]bool
		fail      error
		want      bool
		wantAsked []string
	}{
		"list and watch":           {allowed: map[string]bool{"list": true, "watch": true}, want: true, wantAsked: []string{"list", "watch"}},
		"list only":                {allowed: map[string]bool{"list": true}, wantAsked: []string{"list", "watch"}},
		"neither: watch not asked": {allowed: map[string]bool{}, wantAsked: []string{"list"}},
		"the review fails":         {fail: errors.New("connection refused"), wantAsked: []string{"list"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var asked []string
			scheme := runtime.NewScheme()
			if err := authorizationv1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
					review := obj.(*authorizationv1.SelfSubjectAccessReview)
					attrs := review.Spec.ResourceAttributes
					if attrs.Resource != "namespaces" || attrs.Namespace != "" || attrs.Group != "" {
						t.Errorf("asked about %+v, want namespaces cluster-wide", attrs)
					}
					asked = append(asked, attrs.Verb)
					review.Status.Allowed = tc.allowed[attrs.Verb]
					return tc.fail
				},
			}).Build()
			got, err := MayWatch(c)(t.Context())
			if got != tc.want || (err != nil) != (tc.fail != nil) {
				t.Errorf("MayWatch() = %t, %v; want %t, error %v", got, err, tc.want, tc.fail)
			}
			if diff := cmp.Diff(tc.wantAsked, asked); diff != "" {
				t.Errorf("reviews asked (-want +got):\n%s", diff)
			}
		})
	}
}
