@echo off
rem The svc command on Windows: runs main.ts with the project's own Deno, installed into .tools\
rem from the npm registry on first use (Node.js's npm is needed once). Set SVC_DENO to use another
rem deno.exe. Relative paths on the command line mean the directory you ran it from.
setlocal
set "root=%~dp0.."
set "SVC_INVOCATION_DIR=%CD%"
if defined SVC_DENO (
  set "deno=%SVC_DENO%"
) else (
  set "deno=%root%\.tools\node_modules\.bin\deno.cmd"
)
if not exist "%deno%" (
  where npm >nul 2>nul || (echo svc: npm is needed once to install Deno 2.9 ^(install Node.js 20+^) 1>&2 & exit /b 3)
  echo svc: installing Deno 2.9 from the npm registry into .tools\ ^(first run only^) 1>&2
  call npm install --prefix "%root%\.tools" --no-audit --no-fund --loglevel=error deno@2.9 1>&2 || exit /b 3
)
pushd "%root%"
call "%deno%" run --quiet --allow-all "%root%\main.ts" %*
set "code=%ERRORLEVEL%"
popd
exit /b %code%
