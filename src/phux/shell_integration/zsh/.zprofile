# phux shell integration for zsh: zsh reads this file because ZDOTDIR points
# here during startup (see .zshenv). It reads the user's .zprofile exactly as zsh
# would have, at top level, then keeps phux's hooks first and last.
if [[ -n ${_phux_zdotdir_set-} ]]; then
    builtin export ZDOTDIR=$_phux_zdotdir
else
    builtin unset ZDOTDIR
fi
if [[ -r ${ZDOTDIR:-$HOME}/.zprofile ]]; then
    builtin source -- ${ZDOTDIR:-$HOME}/.zprofile
fi
if (( ${+functions[_phux_after_startup_file]} )); then
    _phux_after_startup_file .zprofile
fi
