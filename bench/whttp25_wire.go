package main

// Wires whttp25.go's subcommands (hangup, sendfile, wsidle and their
// server children) until main.go's run lists them: replace this file by
// their cases there.

import "os"

func init() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "hangup", "sendfile", "wsidle", whttp25ServeMode:
			os.Exit(whttp25Main(os.Args[1], os.Args[2:]))
		}
	}
}
