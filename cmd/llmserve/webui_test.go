package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWebUIFiles checks the --webui-path folder: served when it has an
// index.html, refused with a message otherwise, unused with --no-webui,
// and closed to symbolic links that lead out of it.
func TestWebUIFiles(t *testing.T) {
	good := t.TempDir()
	if err := os.WriteFile(filepath.Join(good, "index.html"), []byte("<h1>mine</h1>"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(good, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()

	page, closePage, err := webuiFiles(serveOptions{webuiPath: good})
	if err != nil {
		t.Fatal(err)
	}
	defer closePage()
	if b, err := fs.ReadFile(page, "index.html"); err != nil || string(b) != "<h1>mine</h1>" {
		t.Errorf("index.html: %q, %v", b, err)
	}
	if b, err := fs.ReadFile(page, "leak.txt"); err == nil {
		t.Errorf("a symbolic link out of the folder was followed: %q", b)
	}

	refused := []struct {
		name string
		o    serveOptions
		want string
	}{
		{"no index.html", serveOptions{webuiPath: empty}, "no index.html"},
		{"missing folder", serveOptions{webuiPath: filepath.Join(empty, "nope")}, "--webui-path"},
		{"a file", serveOptions{webuiPath: filepath.Join(good, "index.html")}, "--webui-path"},
	}
	for _, tt := range refused {
		if _, _, err := webuiFiles(tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.want)
		}
	}
	for _, o := range []serveOptions{{}, {webuiPath: empty, noWebUI: true}} {
		page, closePage, err := webuiFiles(o)
		if err != nil || page != nil {
			t.Errorf("%+v: page %v, error %v; want the built-in page (nil)", o, page, err)
		}
		closePage()
	}
}
