"""What every argument and text is checked for: validation, secrets, characters and
prompt-injection flags."""
