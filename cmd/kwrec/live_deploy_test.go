package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// TestLiveDeployManifests checks the flight recorder's manifests (deploy/)
// against a control plane: all of them pass a server-side dry run, and
// kwrec record --all, run with the ServiceAccount's token and its
// ClusterRole bound for real, records what the role allows and is refused
// nothing but Secrets, which it reports on stderr and in the header and
// records once the optional Secrets role is bound. The Deployment itself
// is never started.
func TestLiveDeployManifests(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not on PATH")
	}
	cp := controlplanetest.Start(t)
	const deploy = "../../deploy"
	// Namespaced objects dry-run only into a namespace that exists.
	kubectl(t, cp.Kubeconfig, "create", "namespace", "kwrec")

	t.Run("the manifests pass a server-side dry run", func(t *testing.T) {
		out := kubectl(t, cp.Kubeconfig, "apply", "--dry-run=server", "-f", deploy, "-f", deploy+"/secrets")
		for _, want := range []string{
			"namespace/kwrec", "serviceaccount/kwrec", "clusterrole.rbac.authorization.k8s.io/kwrec-reader",
			"clusterrolebinding.rbac.authorization.k8s.io/kwrec-reader", "persistentvolumeclaim/kwrec-data", "deployment.apps/kwrec",
			"clusterrole.rbac.authorization.k8s.io/kwrec-secrets-reader", "clusterrolebinding.rbac.authorization.k8s.io/kwrec-secrets-reader",
		} {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + ` (created|configured|unchanged) \(server dry run\)$`).MatchString(out) {
				t.Errorf("kubectl apply --dry-run=server printed no line for %s:\n%s", want, out)
			}
		}
	})

	// The role for real, and something of each kind to record.
	kubectl(t, cp.Kubeconfig, "apply", "-f", deploy+"/rbac.yaml")
	kubectl(t, cp.Kubeconfig, "apply", "-f", "testdata/all/objects.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sa := "system:serviceaccount:kwrec:kwrec"
	waitCan(ctx, t, cp.Kubeconfig, sa, "list", "configmaps", "yes")
	tr, err := kubernetes.NewForConfigOrDie(cp.Config).CoreV1().ServiceAccounts("kwrec").CreateToken(ctx, "kwrec", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, cp.Config.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	noKubeconfig(t)
	record := func(t *testing.T) (stderr string, c *cassettes.Cassette) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "cluster.kwrec")
		args := []string{"record", "--all", "--server", cp.Config.Host, "--token", tr.Status.Token, "--certificate-authority", ca, "-o", out}
		code, stdout, stderr := kwrecUntilListed(t, args...)
		if code != 0 {
			t.Fatalf("kwrec record --all with the ServiceAccount's token exited with %d:\n%s%s", code, stdout, stderr)
		}
		c, err := cassettes.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		return stderr, c
	}
	// What the role lets the recorder read, whatever the cluster's version.
	allowed := []string{"/api/v1/configmaps", "/api/v1/namespaces", "/api/v1/nodes", "/api/v1/pods", "/api/v1/serviceaccounts",
		"/apis/apps/v1/deployments", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
		"/apis/storage.k8s.io/v1/storageclasses", "/apis/networking.k8s.io/v1/ingresses"}

	t.Run("without the Secrets role, secrets are skipped and reported, nothing else", func(t *testing.T) {
		stderr, c := record(t)
		if got, want := skippedLines(stderr), []string{"kwrec: recording: skipped secrets: forbidden (list)"}; !cmp.Equal(want, got) {
			t.Errorf("stderr's skipped lines (-want +got):\n%s\nstderr:\n%s", cmp.Diff(want, got), stderr)
		}
		if diff := cmp.Diff([]string{"secrets: forbidden (list)"}, c.Header.Skipped); diff != "" {
			t.Errorf("the header's skipped list (-want +got):\n%s", diff)
		}
		lists := recordedLists(t, c)
		for _, p := range allowed {
			if _, ok := lists[p]; !ok {
				t.Errorf("no list of %s recorded; recorded: %s", p, strings.Join(mapKeys(lists), " "))
			}
		}
		if _, ok := lists["/api/v1/secrets"]; ok {
			t.Errorf("a list of secrets was recorded without the Secrets role")
		}
	})

	kubectl(t, cp.Kubeconfig, "apply", "-f", deploy+"/secrets")
	waitCan(ctx, t, cp.Kubeconfig, sa, "list", "secrets", "yes")

	t.Run("with the Secrets role, nothing is skipped and Secrets are recorded redacted", func(t *testing.T) {
		stderr, c := record(t)
		if got := skippedLines(stderr); got != nil {
			t.Errorf("stderr has skipped lines %q, want none:\n%s", got, stderr)
		}
		if c.Header.Skipped != nil {
			t.Errorf("the header's skipped list is %q, want none", c.Header.Skipped)
		}
		lists := recordedLists(t, c)
		for _, p := range append(allowed, "/api/v1/secrets") {
			if _, ok := lists[p]; !ok {
				t.Errorf("no list of %s recorded; recorded: %s", p, strings.Join(mapKeys(lists), " "))
			}
		}
		if items := lists["/api/v1/secrets"]; !slices.Contains(items, "kwrec-all/password") {
			t.Errorf("the Secrets list holds %q, want kwrec-all/password in it", items)
		}
		for _, in := range c.Interactions {
			if b := in.Body(); strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "aHVudGVyMi") {
				t.Errorf("interaction %d (%s) holds the Secret's value; want it redacted", in.ID, in.Request.URL)
			}
		}
	})
}

// skippedLines returns the lines of stderr that say a resource was
// skipped.
func skippedLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "kwrec: recording: skipped ") {
			out = append(out, l)
		}
	}
	return out
}

// waitCan waits until kubectl auth can-i answers want for user, verb and
// resource: RBAC takes a moment to see a new binding. The API server's
// authorizer is what is waited on; there is nothing to be told of.
func waitCan(ctx context.Context, t *testing.T, kubeconfig, user, verb, resource, want string) {
	t.Helper()
	for {
		out, _ := exec.CommandContext(ctx, "kubectl", "--kubeconfig", kubeconfig, "auth", "can-i", verb, resource, "-A", "--as", user).Output()
		if strings.TrimSpace(string(out)) == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kubectl auth can-i %s %s -A --as %s: %q, still not %q", verb, resource, user, out, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
