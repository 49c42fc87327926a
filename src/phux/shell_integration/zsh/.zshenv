# phux shell integration for zsh, first stage. The phux server starts an
# interactive zsh with ZDOTDIR pointing here, so zsh reads this file first;
# it puts the user's ZDOTDIR back (zsh then reads the user's .zprofile,
# .zshrc and .zlogin itself), reads the user's .zshenv, then loads the hooks.
_phux_dir=${${(%):-%x}:A:h}
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
fi
builtin unset _phux_dir
