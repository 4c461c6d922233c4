package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// webuiFiles opens the --webui-path folder, or returns nil for the
// built-in page. The folder is opened as an os.Root, so no path or
// symbolic link inside it leads out of it; close releases it.
func webuiFiles(o serveOptions) (fs.FS, func(), error) {
	if o.webuiPath == "" || o.noWebUI {
		return nil, func() {}, nil
	}
	root, err := os.OpenRoot(o.webuiPath)
	if err != nil {
		return nil, nil, fmt.Errorf("--webui-path: %w", err)
	}
	page := root.FS()
	if _, err := fs.Stat(page, "index.html"); errors.Is(err, fs.ErrNotExist) {
		root.Close()
		return nil, nil, fmt.Errorf("--webui-path %s: no index.html in the folder", o.webuiPath)
	} else if err != nil {
		root.Close()
		return nil, nil, fmt.Errorf("--webui-path %s: %w", o.webuiPath, err)
	}
	return page, func() { root.Close() }, nil
}
