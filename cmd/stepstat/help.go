package main

// commandHelp holds each command's long help, shown by 'stepstat help COMMAND'.
var commandHelp = map[string]string{}
