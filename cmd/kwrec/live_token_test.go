package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// TestLiveRecordWithTokenAndNoKubeconfig records from the control plane
// with kubectl's connection flags alone: --server, --token (a service
// account's, allowed to read ConfigMaps in default and nothing else) and
// --certificate-authority, with no kubeconfig file and no home to find one
// in.
func TestLiveRecordWithTokenAndNoKubeconfig(t *testing.T) {
	cp := controlplanetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	token := configMapReaderToken(ctx, t, kubernetes.NewForConfigOrDie(cp.Config), "default")
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, cp.Config.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	noKubeconfig(t)
	out := filepath.Join(t.TempDir(), "cm.kwrec")

	code, stdout, stderr := kwrecIn(t, "record", "configmaps", "--token", token, "--server", cp.Config.Host, "--certificate-authority", ca, "-n", "default", "--events", "1", "-o", out)
	if code != 0 {
		t.Fatalf("kwrec record exited with %d:\n%s%s", code, stdout, stderr)
	}
	if want := regexp.MustCompile(`^kwrec: recorded configmaps 1 events \(.+\) in .+ to ` + regexp.QuoteMeta(out) + "\n$"); !want.MatchString(stderr) {
		t.Errorf("kwrec record printed %q on stderr, want one line matching %s", stderr, want)
	}

	code, stdout, stderr = kwrecIn(t, "show", out)
	if code != 0 {
		t.Fatalf("kwrec show exited with %d:\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`GET ` + regexp.QuoteMeta(strings.TrimSuffix(cp.Config.Host, "/")) + `/api/v1/namespaces/default/configmaps\?limit=500`,
		`ConfigMapList rv=\d+ items=1`,
	} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("kwrec show printed no line matching %s:\n%s", want, stdout)
		}
	}
	if b, err := os.ReadFile(out); err != nil {
		t.Fatal(err)
	} else if regexp.MustCompile(regexp.QuoteMeta(token)).Match(b) {
		t.Errorf("%s holds the token; want it redacted", out)
	}
}

// configMapReaderToken makes a service account in ns that may get, list and
// watch ConfigMaps there, creates one ConfigMap for it to record, and
// returns a token of the account.
func configMapReaderToken(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) string {
	t.Helper()
	meta := metav1.ObjectMeta{Name: "kwrec-recorder", Namespace: ns}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: meta.Name, Namespace: ns}},
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "recorded", Namespace: ns}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, meta.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
