// Package docs holds the tests of the repository's documentation: the
// README stays a front page, and every link in it and under docs/ leads
// to a file of the repository and, with a #fragment, to one of its
// headings.
package docs
