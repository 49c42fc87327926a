# phux shell integration for zsh, first stage. The phux server starts an
# interactive zsh with ZDOTDIR pointing here, so zsh reads this file first:
# it reads the user's .zshenv with the user's ZDOTDIR and loads the hooks; the
# user's .zprofile, .zshrc and .zlogin are read by ours beside this file.
_phux_dir=${${(%):-%x}:A:h}
# The pane's key signs every mark (spec/shell-integration.md, "Signed marks"):
# kept in an unexported variable, so the user's files and commands never inherit it.
typeset -g _phux_k=${_PHUX_KEY-}
builtin unset _PHUX_KEY
# Announce the integration before the user's files run: a client then waits for
# the first prompt instead of guessing from quiet time.
if [[ -o interactive && -n $_phux_k ]]; then
    builtin printf '\e]133;I;start;phux_k=%s\a' $_phux_k
fi
# The user's ZDOTDIR (unset: their files are in HOME). zsh reads each startup
# file from $ZDOTDIR when it gets to it, so ZDOTDIR stays pointed here until the
# last one: each of ours (.zprofile, .zshrc, .zlogin) reads the user's own with
# the user's ZDOTDIR, at top level, then puts the hooks last
# (_phux_after_startup_file), after anything a theme added.
if [[ -n ${_PHUX_ZDOTDIR+x} ]]; then
    typeset -g _phux_zdotdir=$_PHUX_ZDOTDIR _phux_zdotdir_set=1
    builtin unset _PHUX_ZDOTDIR
else
    typeset -g _phux_zdotdir= _phux_zdotdir_set=
fi
if [[ -n $_phux_zdotdir_set ]]; then
    builtin export ZDOTDIR=$_phux_zdotdir
else
    builtin unset ZDOTDIR
fi
if [[ -r ${ZDOTDIR:-$HOME}/.zshenv ]]; then
    builtin source -- ${ZDOTDIR:-$HOME}/.zshenv
fi
if [[ -o interactive && ${PHUX_SHELL_INTEGRATION-} != 0 ]]; then
    builtin source -- $_phux_dir/phux.zsh
    _phux_after_startup_file .zshenv
elif [[ -o interactive && -n $_phux_k ]]; then
    # The user's .zshenv turned the integration off: no prompt marks will come.
    builtin printf '\e]133;I;off;phux_k=%s\a' $_phux_k
fi
(( ${+functions[_phux_after_startup_file]} )) || builtin unset _phux_dir
