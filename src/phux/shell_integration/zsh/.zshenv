# phux shell integration for zsh, first stage. The phux server starts an
# interactive zsh with ZDOTDIR pointing here, so zsh reads this file first;
# it puts the user's ZDOTDIR back (zsh then reads the user's .zprofile,
# .zshrc and .zlogin itself), reads the user's .zshenv, then loads the hooks.
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
if [[ -n ${_PHUX_ZDOTDIR+x} ]]; then
    builtin export ZDOTDIR=$_PHUX_ZDOTDIR
    builtin unset _PHUX_ZDOTDIR
else
    builtin unset ZDOTDIR
fi
if [[ -r ${ZDOTDIR:-$HOME}/.zshenv ]]; then
    builtin source -- ${ZDOTDIR:-$HOME}/.zshenv
fi
if [[ -o interactive && ${PHUX_SHELL_INTEGRATION-} != 0 ]]; then
    builtin source -- $_phux_dir/phux.zsh
elif [[ -o interactive && -n $_phux_k ]]; then
    # The user's .zshenv turned the integration off: no prompt marks will come.
    builtin printf '\e]133;I;off;phux_k=%s\a' $_phux_k
fi
builtin unset _phux_dir
