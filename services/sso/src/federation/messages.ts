import { defineMessages } from '@app/platform';
import type { FederationFailure } from './provider.js';

/** The message key of each way an upstream sign-in can end without an account. */
export const FAILURE_MESSAGE: Record<FederationFailure, string> = {
  unknownProvider: 'sso.federation.unknownProvider',
  invalidRequest: 'sso.federation.invalidRequest',
  invalidState: 'sso.federation.invalidState',
  accessDenied: 'sso.federation.accessDenied',
  upstreamFailed: 'sso.federation.upstreamFailed',
  emailUnverified: 'sso.federation.emailUnverified',
  emailTaken: 'sso.federation.emailTaken',
  accountDisabled: 'sso.federation.accountDisabled',
  unavailable: 'sso.federation.unavailable',
};

/** What the error page tells the person: what happened and what to do next. */
defineMessages({
  en: {
    'sso.federation.unknownProvider': 'This sign-in option is not available.',
    'sso.federation.invalidRequest': 'This sign-in link is incomplete. Go back to the application and sign in again.',
    'sso.federation.invalidState':
      'This sign-in attempt has expired, was already used, or was started in another browser. Go back to the application and sign in again.',
    'sso.federation.accessDenied': 'Signing in with {provider} was cancelled. Go back to the application to choose another way to sign in.',
    'sso.federation.upstreamFailed': '{provider} could not complete the sign-in. Try again in a moment.',
    'sso.federation.emailUnverified':
      'Your {provider} account has no verified email address, so it cannot sign you in here. Verify your address at {provider}, then try again.',
    'sso.federation.emailTaken':
      'An account with the email {email} already exists. Sign in with its email and password instead. Your {provider} account was not linked to it: once signed in, ask an administrator to link it.',
    'sso.federation.accountDisabled': 'This account is deactivated. Contact an administrator.',
    'sso.federation.unavailable': 'Sign-in is temporarily unavailable. Try again in a moment.',
  },
  'pt-BR': {
    'sso.federation.unknownProvider': 'Esta opção de login não está disponível.',
    'sso.federation.invalidRequest': 'Este link de login está incompleto. Volte ao aplicativo e entre novamente.',
    'sso.federation.invalidState':
      'Esta tentativa de login expirou, já foi usada ou foi iniciada em outro navegador. Volte ao aplicativo e entre novamente.',
    'sso.federation.accessDenied': 'O login com {provider} foi cancelado. Volte ao aplicativo para escolher outra forma de entrar.',
    'sso.federation.upstreamFailed': '{provider} não conseguiu concluir o login. Tente novamente em instantes.',
    'sso.federation.emailUnverified':
      'Sua conta {provider} não tem endereço de e-mail verificado, então não pode ser usada para entrar aqui. Verifique seu endereço no {provider} e tente novamente.',
    'sso.federation.emailTaken':
      'Já existe uma conta com o e-mail {email}. Entre com o e-mail e a senha dela. Sua conta {provider} não foi vinculada a ela: depois de entrar, peça a um administrador que a vincule.',
    'sso.federation.accountDisabled': 'Esta conta está desativada. Fale com um administrador.',
    'sso.federation.unavailable': 'O login está temporariamente indisponível. Tente novamente em instantes.',
  },
  es: {
    'sso.federation.unknownProvider': 'Esta opción de inicio de sesión no está disponible.',
    'sso.federation.invalidRequest': 'Este enlace de inicio de sesión está incompleto. Vuelva a la aplicación e inicie sesión de nuevo.',
    'sso.federation.invalidState':
      'Este intento de inicio de sesión ha caducado, ya se usó o se inició en otro navegador. Vuelva a la aplicación e inicie sesión de nuevo.',
    'sso.federation.accessDenied': 'Se canceló el inicio de sesión con {provider}. Vuelva a la aplicación para elegir otra forma de iniciar sesión.',
    'sso.federation.upstreamFailed': '{provider} no pudo completar el inicio de sesión. Inténtelo de nuevo en un momento.',
    'sso.federation.emailUnverified':
      'Su cuenta de {provider} no tiene una dirección de correo verificada, así que no puede iniciar sesión aquí con ella. Verifique su dirección en {provider} e inténtelo de nuevo.',
    'sso.federation.emailTaken':
      'Ya existe una cuenta con el correo {email}. Inicie sesión con su correo y contraseña. Su cuenta de {provider} no se vinculó a ella: una vez dentro, pida a un administrador que la vincule.',
    'sso.federation.accountDisabled': 'Esta cuenta está desactivada. Contacte con un administrador.',
    'sso.federation.unavailable': 'El inicio de sesión no está disponible por el momento. Inténtelo de nuevo en un momento.',
  },
  fr: {
    'sso.federation.unknownProvider': "Cette option de connexion n'est pas disponible.",
    'sso.federation.invalidRequest': "Ce lien de connexion est incomplet. Revenez à l'application et connectez-vous à nouveau.",
    'sso.federation.invalidState':
      "Cette tentative de connexion a expiré, a déjà été utilisée ou a été commencée dans un autre navigateur. Revenez à l'application et connectez-vous à nouveau.",
    'sso.federation.accessDenied': "La connexion avec {provider} a été annulée. Revenez à l'application pour choisir un autre moyen de vous connecter.",
    'sso.federation.upstreamFailed': "{provider} n'a pas pu terminer la connexion. Réessayez dans un instant.",
    'sso.federation.emailUnverified':
      "Votre compte {provider} n'a pas d'adresse e-mail vérifiée : il ne peut pas vous connecter ici. Vérifiez votre adresse chez {provider}, puis réessayez.",
    'sso.federation.emailTaken':
      "Un compte avec l'adresse {email} existe déjà. Connectez-vous avec son adresse et son mot de passe. Votre compte {provider} n'y a pas été lié : une fois connecté, demandez à un administrateur de le lier.",
    'sso.federation.accountDisabled': 'Ce compte est désactivé. Contactez un administrateur.',
    'sso.federation.unavailable': 'La connexion est momentanément indisponible. Réessayez dans un instant.',
  },
  de: {
    'sso.federation.unknownProvider': 'Diese Anmeldeoption ist nicht verfügbar.',
    'sso.federation.invalidRequest': 'Dieser Anmeldelink ist unvollständig. Kehren Sie zur Anwendung zurück und melden Sie sich erneut an.',
    'sso.federation.invalidState':
      'Dieser Anmeldeversuch ist abgelaufen, wurde bereits verwendet oder in einem anderen Browser begonnen. Kehren Sie zur Anwendung zurück und melden Sie sich erneut an.',
    'sso.federation.accessDenied': 'Die Anmeldung mit {provider} wurde abgebrochen. Kehren Sie zur Anwendung zurück, um eine andere Anmeldeart zu wählen.',
    'sso.federation.upstreamFailed': '{provider} konnte die Anmeldung nicht abschließen. Versuchen Sie es gleich noch einmal.',
    'sso.federation.emailUnverified':
      'Ihr {provider}-Konto hat keine bestätigte E-Mail-Adresse und kann Sie deshalb hier nicht anmelden. Bestätigen Sie Ihre Adresse bei {provider} und versuchen Sie es erneut.',
    'sso.federation.emailTaken':
      'Ein Konto mit der E-Mail-Adresse {email} existiert bereits. Melden Sie sich mit dessen E-Mail-Adresse und Passwort an. Ihr {provider}-Konto wurde nicht damit verknüpft: Bitten Sie nach der Anmeldung einen Administrator, es zu verknüpfen.',
    'sso.federation.accountDisabled': 'Dieses Konto ist deaktiviert. Wenden Sie sich an einen Administrator.',
    'sso.federation.unavailable': 'Die Anmeldung ist vorübergehend nicht verfügbar. Versuchen Sie es gleich noch einmal.',
  },
});
