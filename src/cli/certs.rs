//! `stalemate certs`: generate the CA and serving certificate for a proxy or sidecar.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

#[derive(Debug, Args)]
pub struct CertsArgs {
    /// Directory to write ca.crt, ca.key, tls.crt and tls.key into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Extra subject alternative names for the serving certificate (IPs or DNS names);
    /// 127.0.0.1, ::1 and localhost are always included.
    #[arg(long = "san", value_name = "NAME")]
    pub sans: Vec<String>,
}

pub fn run(args: CertsArgs) -> Result<()> {
    let bundle = crate::certs::generate("stalemate", &args.sans)?;
    bundle.write_to(&args.out)?;
    println!(
        "wrote {}/{{ca.crt,ca.key,tls.crt,tls.key}}",
        args.out.display()
    );
    Ok(())
}
