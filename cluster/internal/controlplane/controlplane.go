// Package controlplane starts a real, throw-away Kubernetes control plane on
// the loopback address for tests: etcd embedded in the calling process,
// kube-apiserver and the scheduler as child processes built from upstream
// (k8s.io/kubernetes v1.37.2). Authentication is a static bearer token
// generated at start, the serving certificate is self-signed by a CA made at
// start, authorization is AlwaysAllow, and the ServiceAccount admission
// plugin is off (no controller-manager runs to create service accounts).
package controlplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ControlPlane is a running etcd + kube-apiserver (+ scheduler once started).
type ControlPlane struct {
	Dir       string // work directory: certs, logs, configs
	Token     string // admin bearer token
	URL       string // https://127.0.0.1:port of kube-apiserver
	CAPEM     []byte
	Client    *kubernetes.Clientset
	Config    *rest.Config
	EtcdStart time.Duration // embed.StartEtcd until ready
	APIStart  time.Duration // exec until /readyz answers ok

	etcd  *embed.Etcd
	procs []*proc
}

type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// certs writes ca.crt, serving.crt/serving.key (127.0.0.1, localhost) and
// sa.key (the service-account signing key).
func certs(dir string) (caPEM []byte, err error) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "scx-tt-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srv := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	saKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	saDER, _ := x509.MarshalECPrivateKey(saKey)
	for _, f := range []struct {
		name, typ string
		der       []byte
	}{{"ca.crt", "CERTIFICATE", caDER}, {"serving.crt", "CERTIFICATE", srvDER},
		{"serving.key", "EC PRIVATE KEY", keyDER}, {"sa.key", "EC PRIVATE KEY", saDER}} {
		if err := writePEM(filepath.Join(dir, f.name), f.typ, f.der); err != nil {
			return nil, err
		}
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// Start starts etcd (embedded) and the kube-apiserver binary, and waits
// until the apiserver is ready. Stop ends both.
func Start(ctx context.Context, dir, apiserverBin string) (*ControlPlane, error) {
	cp := &ControlPlane{Dir: dir, Token: randHex(16)}
	var err error
	if cp.CAPEM, err = certs(dir); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"),
		[]byte(cp.Token+",admin,admin,\"system:masters\"\n"), 0o600); err != nil {
		return nil, err
	}

	// etcd, embedded.
	t0 := time.Now()
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	cfg := embed.NewConfig()
	cfg.Name = "scx-tt-test"
	cfg.Dir = filepath.Join(dir, "etcd")
	cu, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(ports[0]))
	pu, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(ports[1]))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{filepath.Join(dir, "etcd.log")}
	cfg.UnsafeNoFsync = true // a throw-away store
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	cp.etcd = e
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		cp.Stop()
		return nil, fmt.Errorf("etcd not ready after 30s")
	}
	cp.EtcdStart = time.Since(t0)

	// kube-apiserver.
	t1 := time.Now()
	port := ports[2]
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	args := []string{
		"--etcd-servers=" + cu.String(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file=" + filepath.Join(dir, "serving.crt"),
		"--tls-private-key-file=" + filepath.Join(dir, "serving.key"),
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/24",
		// No controller-manager: no service accounts for pods, and no
		// node lifecycle controller to lift the not-ready taint that
		// TaintNodesByCondition puts on each new Node.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		// The kubernetes Service's endpoints would be 127.0.0.1, which the
		// reconciler refuses: no reconciler (nothing here uses that Service).
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		"--v=1",
	}
	if err := cp.spawn(ctx, "kube-apiserver", apiserverBin, args); err != nil {
		cp.Stop()
		return nil, err
	}
	if err := cp.waitReady(ctx, 90*time.Second); err != nil {
		cp.Stop()
		return nil, err
	}
	cp.APIStart = time.Since(t1)
	cp.Config = &rest.Config{Host: cp.URL, BearerToken: cp.Token, QPS: 500, Burst: 1000,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.CAPEM}}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		cp.Stop()
		return nil, err
	}
	// The apiserver creates the default namespace shortly after it is ready.
	for {
		if _, err := cp.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		} else if time.Since(t1) > 90*time.Second {
			cp.Stop()
			return nil, fmt.Errorf("namespace default: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cp.APIStart = time.Since(t1)
	return cp, nil
}

func (cp *ControlPlane) spawn(ctx context.Context, name, bin string, args []string) error {
	log, err := os.Create(filepath.Join(cp.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// The child dies with this process even if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); log.Close(); close(p.exited) }()
	cp.procs = append(cp.procs, p)
	return nil
}

func (cp *ControlPlane) waitReady(ctx context.Context, limit time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cp.CAPEM)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		if err := cp.Exited("kube-apiserver"); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", cp.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+cp.Token)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("kube-apiserver not ready after %v: %s (see %s)", limit, last, filepath.Join(cp.Dir, "kube-apiserver.log"))
}

// Kubeconfig writes a kubeconfig for the admin token and returns its path.
func (cp *ControlPlane) Kubeconfig() (string, error) {
	p := filepath.Join(cp.Dir, "kubeconfig")
	caPath := filepath.Join(cp.Dir, "ca.crt")
	s := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, cp.URL, caPath, cp.Token)
	return p, os.WriteFile(p, []byte(s), 0o600)
}

// StartScheduler starts the scheduler binary with the given config file.
func (cp *ControlPlane) StartScheduler(ctx context.Context, bin, configPath string, extra ...string) error {
	args := append([]string{"--config=" + configPath, "--secure-port=0", "--v=3"}, extra...)
	return cp.spawn(ctx, "scheduler", bin, args)
}

// Exited returns an error when the named child process has exited.
func (cp *ControlPlane) Exited(name string) error {
	for _, p := range cp.procs {
		if p.name != name {
			continue
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited: %v (see %s)", name, p.err, filepath.Join(cp.Dir, name+".log"))
		default:
		}
	}
	return nil
}

// Stop ends the child processes (SIGTERM, then SIGKILL after 5 s) and etcd.
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		p := cp.procs[i]
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
	cp.procs = nil
	if cp.etcd != nil {
		cp.etcd.Close()
		cp.etcd = nil
	}
}
