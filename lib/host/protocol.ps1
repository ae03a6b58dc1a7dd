# svc worker, part of lib/host.ps1 (dot-sourced by it): diagnostics and the frames of docs/worker-protocol.md
# (parsed, and error records encoded, by the compiled half in lib/host/cs).

function Write-Diag([string]$Message) {
    [Console]::Error.WriteLine("host.ps1: $Message")
}

# Exactly one layer: a .NET call made from script wraps what it throws in MethodInvocationException.
function Get-InnerException([System.Exception]$Exception) {
    if ($Exception -is [System.Management.Automation.MethodInvocationException] -and $null -ne $Exception.InnerException) {
        return $Exception.InnerException
    }
    return $Exception
}

function Get-NonEmpty([string]$Text) {
    if ([string]::IsNullOrEmpty($Text)) { return $null }
    return $Text
}

# JSON null or absent -> empty array; a scalar -> one item. The comma stops the caller unrolling it.
function ConvertTo-List($Value) {
    if ($null -eq $Value) { return , ([object[]]@()) }
    return , ([object[]]@($Value))
}

function Send-Frame([string]$Json) {
    $script:Writer.WriteLine($Json)
}

# Encoded by the compiled half: ConvertTo-Json would load the Utility module into the host runspace
# (35-40 ms of a worker's first discovery) for answers made only of tables, lists, strings and numbers.
function Send-Response($Id, $Result) {
    Send-Frame ([Svc.Host.JsonValue]::SuccessFrame($Id, $Result))
}

# Failure frames are built where the slot loop builds its own (lib/host/cs/JsonValue.cs, SlotLoop.cs).
function Send-Failure($Id, [string]$Kind, [string]$Message, $Record) {
    Send-Frame ([Svc.Host.JsonValue]::FailureFrame($Id, $Kind, $Message, $Record))
}

# A failure answer for what a catch block caught: the exception's error record and its ErrorInfo.
function Send-ExceptionFailure($Id, [string]$Kind, [System.Exception]$Exception) {
    $script:Loop.SendFailure($Id, $Kind, [Svc.Host.ErrorInfo]::RecordOf((Get-InnerException $Exception)))
}

function Connect-Endpoint([string]$Spec) {
    if ($Spec.StartsWith('unix:', [System.StringComparison]::Ordinal)) {
        $socket = [System.Net.Sockets.Socket]::new([System.Net.Sockets.AddressFamily]::Unix,
            [System.Net.Sockets.SocketType]::Stream, [System.Net.Sockets.ProtocolType]::Unspecified)
        $socket.Connect([System.Net.Sockets.UnixDomainSocketEndPoint]::new($Spec.Substring(5)))
    } elseif ($Spec -match '^tcp:(.+):(\d{1,5})$') {
        $address = [System.Net.IPAddress]::Parse(($Matches[1] -replace '^\[|\]$', ''))
        $socket = [System.Net.Sockets.Socket]::new($address.AddressFamily,
            [System.Net.Sockets.SocketType]::Stream, [System.Net.Sockets.ProtocolType]::Tcp)
        $socket.NoDelay = $true
        $socket.Connect($address, [int]$Matches[2])
    } else {
        throw "Unsupported endpoint '$Spec'."
    }
    return [System.Net.Sockets.NetworkStream]::new($socket, $true)
}
